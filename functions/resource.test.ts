import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { selectResource } from './resource.ts';

describe('selectResource', () => {
  it('keeps a plural, short name or kind as the name', () => {
    assert.deepEqual(selectResource('kopfexamples'), { name: 'kopfexamples' });
    assert.deepEqual(selectResource('kex'), { name: 'kex' });
    assert.deepEqual(selectResource('KopfExample'), { name: 'KopfExample' });
  });

  it('splits plural.group at the first dot', () => {
    assert.deepEqual(selectResource('kopfexamples.kopf.dev'), { group: 'kopf.dev', name: 'kopfexamples' });
  });

  it('copies a selector without its absent fields', () => {
    const given = { group: 'apps', version: undefined, name: 'deployments' };
    const selected = selectResource(given);
    assert.deepEqual(selected, { group: 'apps', name: 'deployments' });
    assert.equal(Object.hasOwn(selected, 'version'), false);
    assert.notEqual(selected, given);
  });

  it('refuses empty parts', () => {
    assert.throws(() => selectResource(''), /"name" must be a non-empty string/);
    assert.throws(() => selectResource('kopfexamples.'), /"group" must be a non-empty string/);
    assert.throws(() => selectResource({ name: '' }), /"name" must be a non-empty string/);
    assert.throws(() => selectResource({ group: 'apps' } as never), /"name" must be a non-empty string/);
  });
});
