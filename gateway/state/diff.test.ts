import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { diff } from './diff.ts';

describe('diff', () => {
  it('reports additions, changes and removals by path, recursing into objects only', () => {
    assert.deepEqual(diff({ spec: { a: 1, b: [1, 2], c: 'x' } }, { spec: { a: 2, b: [1, 2, 3], d: true } }), [
      ['change', ['spec', 'a'], 1, 2],
      ['change', ['spec', 'b'], [1, 2], [1, 2, 3]],
      ['remove', ['spec', 'c'], 'x', undefined],
      ['add', ['spec', 'd'], undefined, true],
    ]);
  });

  it('is empty for equal values whatever the key order, and whole for a creation', () => {
    assert.deepEqual(diff({ a: { x: 1, y: [{ z: 1 }] } }, { a: { y: [{ z: 1 }], x: 1 } }), []);
    assert.deepEqual(diff(undefined, { a: 1 }), [['add', [], undefined, { a: 1 }]]);
  });
});
