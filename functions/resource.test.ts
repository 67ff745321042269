import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EVERYTHING, resourceFor, selectResource } from './resource.ts';

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
    assert.throws(
      () => selectResource({ group: 'apps' } as never),
      /give a "name" or a "category", not neither/,
    );
    assert.throws(() => selectResource({ category: '' }), /"category" must be a non-empty string/);
  });

  it('selects by category, narrowed by group and version', () => {
    assert.deepEqual(selectResource({ category: 'all' }), { category: 'all' });
    assert.deepEqual(selectResource({ group: 'kopf.dev', version: 'v1', category: 'kopf' }), {
      group: 'kopf.dev',
      version: 'v1',
      category: 'kopf',
    });
    assert.throws(
      () => selectResource({ name: 'pods', category: 'all' } as never),
      /give a "name" or a "category", not both/,
    );
  });

  it('selects EVERYTHING, in one group, the core group included', () => {
    assert.equal(EVERYTHING, '*');
    assert.deepEqual(selectResource(EVERYTHING), { name: '*' });
    assert.deepEqual(selectResource(`${EVERYTHING}.kopf.dev`), { group: 'kopf.dev', name: '*' });
    assert.deepEqual(selectResource({ group: '', name: EVERYTHING }), { group: '', name: '*' });
    assert.throws(() => selectResource('kopf*'), /not a pattern/);
    assert.throws(() => selectResource({ name: '*examples' }), /not a pattern/);
  });

  it('refuses EVERYTHING for admission handlers, but takes a category', () => {
    assert.throws(
      () => resourceFor('on.validate', 'validate', EVERYTHING),
      /on.validate: .*cannot review EVERYTHING/,
    );
    assert.throws(() => resourceFor('on.mutate', 'mutate', '*.apps'), /cannot review EVERYTHING/);
    assert.deepEqual(resourceFor('on.validate', 'validate', { category: 'kopf' }), { category: 'kopf' });
    assert.deepEqual(resourceFor('on.event', 'event', EVERYTHING), { name: '*' });
  });
});
