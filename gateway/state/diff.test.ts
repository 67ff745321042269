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

  // Found by the generated changes of plan.test.ts: a key one side lacked was read off Object.prototype,
  // so adding `toString` was a change from a function, and `__proto__` one from Object.prototype.
  it('reports a key named as a member of Object.prototype as added or removed, as any other', () => {
    const added = JSON.parse('{"spec":{"toString":1,"__proto__":{"a":1}}}');
    assert.deepEqual(diff({ spec: {} }, added), [
      ['add', ['spec', '__proto__'], undefined, { a: 1 }],
      ['add', ['spec', 'toString'], undefined, 1],
    ]);
    assert.deepEqual(diff(added, { spec: {} }), [
      ['remove', ['spec', '__proto__'], { a: 1 }, undefined],
      ['remove', ['spec', 'toString'], 1, undefined],
    ]);
  });
});
