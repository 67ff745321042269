import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bareRecord, equal, isObject, jsonCopy, mergePatched, valueAt } from './json.ts';

describe('JSON helpers', () => {
  it('tell objects from arrays and null', () => {
    assert.equal(isObject({}), true);
    assert.equal(isObject([]), false);
    assert.equal(isObject(null), false);
  });

  it('compare objects key by key whatever the order, and arrays item by item', () => {
    assert.equal(equal({ a: { x: 1, y: [{ z: 1 }] } }, { a: { y: [{ z: 1 }], x: 1 } }), true);
    assert.equal(equal([1, { a: 2 }], [1, { a: 3 }]), false);
    assert.equal(equal({ a: undefined }, { b: undefined }), false);
  });

  it('read dotted paths and stop at missing parts', () => {
    assert.equal(valueAt({ spec: { replicas: 3 } }, 'spec.replicas'), 3);
    assert.equal(valueAt({ spec: 5 }, 'spec.replicas'), undefined);
    assert.equal(valueAt({}, 'metadata.labels.app'), undefined);
  });

  it('read own properties only, so a path cannot reach the prototype', () => {
    assert.equal(valueAt({ spec: {} }, 'spec.constructor'), undefined);
    assert.equal(valueAt({ spec: {} }, 'spec.toString'), undefined);
    assert.equal(equal({ constructor: 1 }, { toString: 1 }), false);
  });
});

describe('jsonCopy', () => {
  it('copies deeply, as JSON across a network would: nothing shared, undefined members dropped', () => {
    const original = { a: { b: [1, { c: 'd' }] }, gone: undefined };
    const copy = jsonCopy(original);
    assert.deepEqual(copy, { a: { b: [1, { c: 'd' }] } });
    assert.notEqual(copy.a, original.a);
    assert.notEqual(copy.a.b[1], original.a.b[1]);
  });
});

describe('mergePatched', () => {
  it('merges into objects with no prototype, where a hostile key stays a key', () => {
    const patch = JSON.parse('{"spec":{"__proto__":{"polluted":true},"toString":1}}');
    const merged = mergePatched({ spec: { kept: 1 } }, patch) as Record<string, Record<string, unknown>>;
    assert.equal(Object.getPrototypeOf(merged.spec), null);
    assert.equal(Object.hasOwn(merged.spec as object, '__proto__'), true);
    assert.equal(merged.spec?.polluted, undefined);
    assert.deepEqual(Object.keys(merged.spec as object), ['kept', '__proto__', 'toString']);
    assert.equal(Object.getPrototypeOf(bareRecord(JSON.parse('{"__proto__":{"a":1}}'))), null);
  });
});
