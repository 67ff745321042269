import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PROTOCOL } from '../../protocol/index.ts';
import { ProtocolError, parseManifest } from './validation.ts';

const manifest = (resource: unknown, kind = 'event') =>
  parseManifest({ protocol: PROTOCOL, name: 'svc', handlers: [{ id: 'h', kind, resource }] });

describe("a manifest's resource selectors", () => {
  it('take a name, *, or a category, narrowed by group and version', () => {
    for (const resource of [
      { name: 'kex' },
      { name: '*' },
      { group: '', name: '*' },
      { category: 'all' },
      { group: 'kopf.dev', version: 'v1', category: 'kopf' },
    ]) {
      assert.deepEqual(manifest(resource).manifest.handlers[0]?.resource, resource);
    }
  });

  it('take exactly one of name and category', () => {
    assert.throws(() => manifest({ group: 'apps' }), /resource needs a name or a category, and has neither/);
    assert.throws(
      () => manifest({ name: 'pods', category: 'all' }),
      /resource needs a name or a category, not both/,
    );
    assert.throws(() => manifest({ category: '' }), /resource.category must be a non-empty string/);
    assert.throws(() => manifest({ name: 3 }), /resource.name must be a non-empty string/);
    assert.throws(() => manifest({ category: 'all', group: 1 }), /resource.group must be a string/);
    assert.throws(() => manifest('pods'), ProtocolError);
  });

  it('refuse admission handlers for every resource, but not by category', () => {
    assert.throws(() => manifest({ name: '*' }, 'validate'), /cannot review every resource/);
    assert.throws(() => manifest({ name: '*.apps' }, 'mutate'), /cannot review every resource/);
    assert.equal(manifest({ category: 'kopf' }, 'validate').manifest.handlers.length, 1);
    assert.equal(manifest({ name: '*' }, 'reconcile').manifest.handlers.length, 1);
  });
});
