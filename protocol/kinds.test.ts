import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { kindsFor } from './kinds.ts';

describe('kindsFor', () => {
  it('gives the kinds a reason always calls', () => {
    assert.deepEqual([...kindsFor('delete')], ['delete']);
    assert.deepEqual([...kindsFor('admission')].sort(), ['mutate', 'validate']);
    assert.equal(kindsFor('create').includes('create'), true);
    assert.equal(kindsFor('create').includes('update'), false);
  });

  it('gives the same kinds however often asked, and none a caller can change for the next', () => {
    const first = kindsFor('update');
    assert.equal(kindsFor('update'), first);
    assert.throws(() => (first as string[]).push('delete'), TypeError);
    assert.deepEqual(kindsFor('update'), first);
  });
});
