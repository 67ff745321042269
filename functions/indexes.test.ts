import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { IndexContents, InvocationResponse } from '../protocol/index.ts';
import { operator } from './index.ts';
import { indexOutcome } from './indexes.ts';
import { invocation, SECRET, signedInvoke, signedManifest } from './test-helpers.ts';

const answer = async (op: ReturnType<typeof operator>, request: Parameters<typeof signedInvoke>[1]) => {
  const response = await op.fetch(await signedInvoke(op.name, request));
  return {
    status: response.status,
    body: (await response.json()) as InvocationResponse & { error?: string },
  };
};

describe('index functions', () => {
  it('index a plain object or a Map by its keys, anything else under null, and keep the values on no result', () => {
    assert.deepEqual(indexOutcome({ a: 1, b: undefined }), {
      status: 'success',
      result: [
        ['a', 1],
        ['b', null],
      ],
    });
    assert.deepEqual(indexOutcome(new Map([['k', { deep: true }]])), {
      status: 'success',
      result: [['k', { deep: true }]],
    });
    assert.deepEqual(indexOutcome(['x', 'y']), { status: 'success', result: [[null, ['x', 'y']]] });
    assert.deepEqual(indexOutcome('name'), { status: 'success', result: [[null, 'name']] });
    assert.deepEqual(indexOutcome(undefined), { status: 'success' });
    assert.deepEqual(
      indexOutcome({}),
      { status: 'success', result: [] },
      'an empty object removes the values',
    );
    assert.equal(indexOutcome(new Map([[1, 'x']])).status, 'permanent');
    assert.equal(indexOutcome({ fn: () => {} }).status, 'permanent');
  });

  it('refuse to patch, post events or apply: what they return is all that counts', async () => {
    const op = operator({ name: 'idx', secret: SECRET });
    op.index('kex', function patching({ patch, name }) {
      patch.status = { seen: true };
      return name;
    });
    const { body } = await answer(op, invocation(['patching'], {}, { reason: 'index' }));
    assert.deepEqual(body.outcomes.patching, {
      status: 'permanent',
      message:
        'index patching patched, posted events or applied objects: an index function only returns values',
    });
  });

  it('keep the values on an unexpected error, as Kopf does, unless told otherwise', async () => {
    const op = operator({ name: 'idx', secret: SECRET });
    op.index('kex', function kept() {
      throw new Error('broken');
    });
    op.index('kex', { errors: 'temporary', backoff: 5 }, function retried() {
      throw new Error('broken');
    });
    const { body } = await answer(op, invocation(['kept', 'retried'], {}, { reason: 'index' }));
    assert.deepEqual(body.outcomes, {
      kept: { status: 'success' },
      retried: { status: 'temporary', message: 'broken', delay: 5 },
    });
    assert.match(body.logs[0]?.message ?? '', /handler failed, ignored \(errors: 'ignored'\): broken/);
  });

  it('are never called when declarative: the gateway computes those', async () => {
    const op = operator({ name: 'idx', secret: SECRET });
    op.index('kex', { id: 'byApp' }, { key: { label: 'app' } });
    const { status, body } = await answer(op, invocation(['byApp'], {}, { reason: 'index' }));
    assert.equal(status, 400);
    assert.match(body.error ?? '', /index "byApp" is declarative: the gateway computes it/);
  });
});

describe('handlers that read indexes', () => {
  it('receive only the indexes they declare, as maps, an index not sent being empty', async () => {
    const op = operator({ name: 'idx', secret: SECRET });
    op.index('pods', function phases({ name }) {
      return name;
    });
    op.index('pods', { id: 'byNode' }, { key: 'spec.nodeName' });
    const seen: Record<string, unknown> = {};
    op.on.create('kex', { indexes: ['phases', 'byNode'] }, function both({ indexes }) {
      seen.both = Object.fromEntries(Object.entries(indexes).map(([id, index]) => [id, [...index]]));
    });
    op.on.create('kex', function none({ indexes }) {
      seen.none = Object.keys(indexes);
    });
    const request = invocation(['both', 'none'], {}, { indexes: { phases: [['Running', ['a', 'b']]] } });
    assert.equal((await answer(op, request)).status, 200);
    assert.deepEqual(seen, { both: { phases: [['Running', ['a', 'b']]], byNode: [] }, none: [] });
  });

  it('keep an index sent whole at its version, and take a later call naming that version only', async () => {
    const op = operator({ name: 'idx', secret: SECRET });
    op.index('pods', function phases({ name }) {
      return name;
    });
    const seen: unknown[] = [];
    op.on.create('kex', { indexes: ['phases'] }, function reads({ indexes }) {
      seen.push([...(indexes.phases ?? [])]);
    });
    const named = (version: string, contents?: IndexContents) =>
      invocation(
        ['reads'],
        {},
        { indexVersions: { phases: version }, ...(contents ? { indexes: { phases: contents } } : {}) },
      );
    const missing = await answer(op, named('g.1'));
    assert.equal(missing.status, 200);
    assert.deepEqual(missing.body, { protocol: 'causeway.dev/v1', missingIndexes: ['phases'] });
    assert.deepEqual(seen, [], 'no handler runs without its index');
    assert.equal((await answer(op, named('g.1', [['Running', ['a']]]))).status, 200);
    assert.equal((await answer(op, named('g.1'))).status, 200);
    assert.deepEqual(seen, [[['Running', ['a']]], [['Running', ['a']]]]);
    const newer = await answer(op, named('g.2'));
    assert.deepEqual(newer.body, { protocol: 'causeway.dev/v1', missingIndexes: ['phases'] });
  });

  it('keep no index the operator does not declare, whatever a call names', async () => {
    const op = operator({ name: 'idx', secret: SECRET });
    op.on.create('kex', function reads() {});
    const call = (contents?: IndexContents) =>
      invocation(
        ['reads'],
        {},
        { indexVersions: { other: 'g.1' }, ...(contents ? { indexes: { other: contents } } : {}) },
      );
    assert.equal((await answer(op, call([['k', ['v']]]))).status, 200);
    assert.deepEqual((await answer(op, call())).body, {
      protocol: 'causeway.dev/v1',
      missingIndexes: ['other'],
    });
  });

  it('are refused when they name an index the operator does not declare, or name it badly', async () => {
    const op = operator({ name: 'idx', secret: SECRET });
    op.on.create('kex', { indexes: ['missing'] }, function reader() {});
    const response = await op.fetch(await signedManifest('idx'));
    assert.equal(response.status, 500);
    assert.match(
      ((await response.json()) as { error: string }).error,
      /handler "reader" reads index "missing", which this operator does not declare/,
    );
    assert.throws(
      () => op.on.update('kex', { id: 'x', indexes: 'missing' as never }, () => {}),
      /option "indexes" must list the ids/,
    );
    assert.throws(() => op.index('kex', { indexes: ['x'] } as never, () => {}), /unknown option "indexes"/);
  });
});

describe('declaring indexes', () => {
  it('checks a definition: parts as field paths, labels or annotations; an id; no callbacks', () => {
    const op = operator({ name: 'idx', secret: SECRET });
    assert.throws(
      () => op.index('kex', { id: 'x' }, { key: { label: 'a', field: 'b' } as never }),
      /option "key" takes field paths/,
    );
    assert.throws(() => op.index('kex', { id: 'x' }, { keys: 'a' } as never), /not "keys"/);
    assert.throws(() => op.index('kex', {}, { key: 'spec.a' } as never), /anonymous handler needs an id/);
    assert.throws(
      () => op.index('kex', { id: 'x', when: () => true }, { key: 'spec.a' }),
      /a declarative index is computed by the gateway: it takes no callbacks/,
    );
    assert.throws(() => op.index('kex', { id: 'x' }, 'spec.a' as never), /a function, or a \{ key, value \}/);
  });
});
