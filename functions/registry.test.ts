import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRegistry } from './registry.ts';

describe('registration', () => {
  it('takes the id from the function name, or from the id option', () => {
    const { on, handlers } = createRegistry();
    on.create('kopfexamples', function create_fn() {});
    const arrow = () => {};
    on.create('kex', arrow);
    on.create('kopfexamples.kopf.dev', { id: 'explicit' }, () => {});
    assert.deepEqual(
      [...handlers.values()].map(({ id, kind, resource }) => ({ id, kind, resource })),
      [
        { id: 'create_fn', kind: 'create', resource: { name: 'kopfexamples' } },
        { id: 'arrow', kind: 'create', resource: { name: 'kex' } },
        { id: 'explicit', kind: 'create', resource: { group: 'kopf.dev', name: 'kopfexamples' } },
      ],
    );
  });

  it('refuses an anonymous handler without an id', () => {
    const { on } = createRegistry();
    assert.throws(() => on.create('kex', () => {}), /anonymous handler needs an id/);
  });

  it('refuses a duplicate id, whether from names or options', () => {
    const { on } = createRegistry();
    on.create('kex', function create_fn() {});
    assert.throws(() => on.create('pods', function create_fn() {}), /"create_fn" is already registered/);
    assert.throws(
      () => on.create('pods', { id: 'create_fn' }, () => {}),
      /"create_fn" is already registered/,
    );
  });

  it('refuses ids that cannot name a status field, options it does not know, and non-functions', () => {
    const { on } = createRegistry();
    assert.throws(
      () => on.create('kex', function f() {}.bind(null)),
      /"bound f" must not contain whitespace/,
    );
    assert.throws(() => on.create('kex', { id: '' }, () => {}), /"id" must be a non-empty string/);
    assert.throws(() => on.create('kex', { retries: 3 } as never, () => {}), /unknown option "retries"/);
    assert.throws(() => on.create('kex', 'create_fn' as never), /the handler must be a function/);
  });

  it('offers exactly the kinds the protocol defines', () => {
    assert.deepEqual(Object.keys(createRegistry().on), ['create']);
  });
});
