import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonPatchOf } from './patch.ts';

describe('merge patches as a JSONPatch', () => {
  it('applies the merge patches in order and gives their sum as RFC 6902 operations', () => {
    const object = { metadata: { name: 'a', labels: { keep: 'yes', drop: 'no' } }, spec: { size: 1 } };
    const operations = jsonPatchOf(object, [
      { spec: { size: 2, mode: 'fast' } },
      { spec: { size: 3 }, metadata: { labels: { drop: null } } },
    ]);
    assert.deepEqual(
      [...operations].sort((a, b) => a.path.localeCompare(b.path)),
      [
        { op: 'remove', path: '/metadata/labels/drop' },
        { op: 'add', path: '/spec/mode', value: 'fast' },
        { op: 'replace', path: '/spec/size', value: 3 },
      ],
    );
  });

  it('escapes ~ and / in keys', () => {
    const operations = jsonPatchOf({ metadata: { annotations: {} } }, [
      { metadata: { annotations: { 'example.com/a~b': 'x' } } },
    ]);
    assert.deepEqual(operations, [
      { op: 'add', path: '/metadata/annotations/example.com~1a~0b', value: 'x' },
    ]);
  });

  it('is empty when nothing changes', () => {
    assert.deepEqual(jsonPatchOf({ spec: { a: 1 } }, [{ spec: { a: 1 } }]), []);
    assert.deepEqual(jsonPatchOf({ spec: { a: 1 } }, []), []);
  });
});
