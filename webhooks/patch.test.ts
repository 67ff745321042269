import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import jsonpatch from 'fast-json-patch';
import { jsonCopy, mergePatched } from '../protocol/json.ts';
import { oddString, PROTOTYPE_KEYS } from '../test/support/arbitraries.ts';
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

describe('generated merge patches as a JSONPatch (property-based)', () => {
  /**
   * Trees whose keys hold `/`, `~` and any code point: what a JSON pointer must escape. None that
   * reaches a prototype: a reply holding one is refused (validation.ts), and the RFC 6902 applier here
   * refuses them too.
   */
  const key = fc
    .oneof(oddString, fc.constantFrom('a/b', '~0', '~1', '/', '~'))
    .filter((each) => !PROTOTYPE_KEYS.includes(each));
  const { tree } = fc.letrec<{ tree: Record<string, unknown>; value: unknown }>((tie) => ({
    tree: fc.dictionary(key, tie('value'), {
      maxKeys: 4,
      noNullPrototype: true,
    }),
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.oneof(fc.constant(null), fc.boolean(), fc.integer(), oddString),
      fc.array(tie('value'), { maxLength: 3 }),
      tie('tree'),
    ),
  }));

  it('makes of the object, applied as RFC 6902 says, what the merge patches make of it', () => {
    fc.assert(
      fc.property(tree, fc.array(tree, { maxLength: 3 }), (object, patches) => {
        const operations = jsonPatchOf(object, patches);
        // As the apiserver gets them: JSON text.
        const sent = JSON.parse(JSON.stringify(operations)) as jsonpatch.Operation[];
        const applied = jsonpatch.applyPatch(structuredClone(object), sent, true, false);
        const merged = patches.reduce<unknown>((current, patch) => mergePatched(current, patch), object);
        assert.deepEqual(jsonCopy(applied.newDocument), jsonCopy(merged));
      }),
      { numRuns: 1000 },
    );
  });
});
