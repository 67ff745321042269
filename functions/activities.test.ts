import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type ActivityInvocation,
  IN_PROCESS,
  type InvocationResponse,
  type Manifest,
  PROTOCOL,
} from '../protocol/index.ts';
import { PermanentError, TemporaryError } from './index.ts';
import { operator } from './operator.ts';
import { SECRET, signedInvoke, signedManifest } from './test-helpers.ts';

const STARTED = '2024-01-01T00:00:00.000Z';

function call(reason: ActivityInvocation['reason'], ids: string[], extra: Partial<ActivityInvocation> = {}) {
  return {
    protocol: PROTOCOL,
    reason,
    handlers: ids.map((id) => ({ id, retry: 0, started: STARTED })),
    deadline: new Date(Date.now() + 30_000).toISOString(),
    ...extra,
  } satisfies ActivityInvocation;
}

async function answer(op: ReturnType<typeof operator>, request: ActivityInvocation) {
  const response = await op.fetch(await signedInvoke(op.name, request));
  return {
    status: response.status,
    body: (await response.json()) as InvocationResponse & { error?: string },
  };
}

describe('activities', () => {
  it('are registered with or without options, and published apart from the resource handlers', async () => {
    const op = operator({ name: 'hooks', secret: SECRET });
    op.on.create('kex', function create_fn() {});
    op.on.startup(function startup_fn() {});
    op.on.cleanup({ id: 'bye', retries: 3, timeout: 10, backoff: 0.5, param: 'p' }, () => {});
    op.on.probe({ id: 'now', timeout: 1 }, () => 1);
    const manifest = (await (await op.fetch(await signedManifest('hooks'))).json()) as Manifest;
    assert.deepEqual(
      manifest.handlers.map(({ id }) => id),
      ['create_fn'],
    );
    assert.deepEqual(manifest.activities, [
      { id: 'startup_fn', kind: 'startup' },
      { id: 'bye', kind: 'cleanup', options: { retries: 3, timeout: 10, backoff: 0.5 } },
      { id: 'now', kind: 'probe', options: { timeout: 1 } },
    ]);
  });

  it('refuse what would be ignored or is ambiguous, saying so', () => {
    const op = operator({ name: 'hooks', secret: SECRET });
    assert.throws(
      () => op.on.probe({ retries: 2 } as never, () => {}),
      /on\.probe: unknown option "retries"/,
    );
    assert.throws(() => op.on.startup({ field: 'spec' } as never, () => {}), /unknown option "field"/);
    assert.throws(() => op.on.startup(() => {}), /anonymous handler needs an id/);
    assert.throws(() => op.on.cleanup({ id: 'x', retries: 0 }, () => {}), /"retries" must be a whole number/);
    assert.throws(() => op.on.login({ id: 'x', timeout: -1 }, () => ({ server: 'https://a' })), /"timeout"/);
    assert.throws(() => op.on.startup({ id: 'x' }, 'no' as never), /the handler must be a function/);
    op.on.startup(function twice() {});
    assert.throws(
      () => op.on.cleanup({ id: 'twice' }, () => {}),
      /activity id "twice" is already registered/,
    );
  });

  it('get what concerns no object, share the memo, and answer each outcome', async () => {
    const op = operator({ name: 'hooks', secret: SECRET });
    const seen: unknown[] = [];
    op.on.startup(function first({ activity, retry, started, memo, logger, param, ...rest }) {
      seen.push({ activity, retry, started: started.toISOString(), param, keys: Object.keys(rest).sort() });
      logger.info('initialising');
      memo.lock = 'made';
      delete memo.stale;
    });
    op.on.startup({ id: 'second', param: 42 }, ({ memo }) => {
      seen.push(memo.lock);
      throw new TemporaryError('not yet', { delay: 2 });
    });
    op.on.startup(function third() {
      throw new PermanentError('never');
    });
    op.on.startup({ id: 'fourth', backoff: 7 }, () => {
      throw new Error('unexpected');
    });
    const { status, body } = await answer(
      op,
      call('startup', ['first', 'second', 'third', 'fourth'], { memo: { stale: 1, kept: 2 } }),
    );
    assert.equal(status, 200);
    assert.deepEqual(body, {
      protocol: PROTOCOL,
      outcomes: {
        first: { status: 'success' },
        second: { status: 'temporary', message: 'not yet', delay: 2 },
        third: { status: 'permanent', message: 'never' },
        fourth: { status: 'temporary', message: 'unexpected', delay: 7 },
      },
      logs: [{ level: 'info', message: 'initialising', handler: 'first' }],
      memo: { lock: 'made', stale: null },
    });
    assert.deepEqual(seen, [
      { activity: 'startup', retry: 0, started: STARTED, param: undefined, keys: ['indexes', 'runtime'] },
      'made',
    ]);
  });

  it('report a probe result, and refuse login results that are no credentials', async () => {
    const op = operator({ name: 'hooks', secret: SECRET });
    op.on.probe(function tasks() {
      return { running: 3 };
    });
    op.on.login(function good() {
      return { server: 'https://10.0.0.1:6443', token: 'abc', expiration: '2030-01-01T00:00:00Z' };
    });
    op.on.login({ id: 'bad' }, () => ({ server: 'https://10.0.0.1:6443', certificateData: 'pem' }) as never);
    assert.deepEqual((await answer(op, call('probe', ['tasks']))).body.outcomes, {
      tasks: { status: 'success', result: { running: 3 } },
    });
    assert.deepEqual((await answer(op, call('login', ['good', 'bad']))).body.outcomes, {
      good: {
        status: 'success',
        result: { server: 'https://10.0.0.1:6443', token: 'abc', expiration: '2030-01-01T00:00:00Z' },
      },
      bad: { status: 'permanent', message: 'login handler bad: "certificateData" and "keyData" go together' },
    });
  });

  it('are answered in-process too, and a call naming the wrong kind or nothing here gets 400', async () => {
    const op = operator({ name: 'hooks', secret: SECRET });
    op.on.cleanup(function bye() {
      return 'done';
    });
    assert.deepEqual((await op[IN_PROCESS].invoke(call('cleanup', ['bye']))).outcomes, {
      bye: { status: 'success', result: 'done' },
    });
    const wrongKind = await answer(op, call('startup', ['bye']));
    assert.equal(wrongKind.status, 400);
    assert.equal(wrongKind.body.error, '"bye" is a cleanup activity, not one for "startup"');
    const unknown = await answer(op, call('probe', ['nothing']));
    assert.equal(unknown.body.error, 'no activity "nothing" here; this service has: bye');
    await assert.rejects(
      op[IN_PROCESS].invoke({ ...call('cleanup', ['bye']), protocol: 'causeway.dev/v0' as never }),
      /protocol "causeway.dev\/v0" is not spoken here/,
    );
  });
});
