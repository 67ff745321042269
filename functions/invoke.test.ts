import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { InvocationRequest } from '../protocol/index.ts';
import type { Handler, HandlerContext } from './context.ts';
import { PermanentError, TemporaryError } from './errors.ts';
import { invoke } from './invoke.ts';
import { createRegistry } from './registry.ts';
import { invocation } from './test-helpers.ts';

/** Registers each handler under its key as id and invokes them all, in the given order. */
function run(
  handlers: Record<string, Handler>,
  request: InvocationRequest = invocation(Object.keys(handlers)),
) {
  const registry = createRegistry();
  for (const [id, fn] of Object.entries(handlers)) registry.on.create('kopfexamples', { id }, fn);
  return invoke(request, registry.handlers);
}

describe('outcomes', () => {
  it('maps returned values to success, with a result only when there is one', async () => {
    const { outcomes } = await run({
      object: () => ({ message: 'hello kex-1' }),
      number: async () => 42,
      nothing: () => undefined,
      nil: async () => null,
    });
    assert.deepEqual(outcomes, {
      object: { status: 'success', result: { message: 'hello kex-1' } },
      number: { status: 'success', result: 42 },
      nothing: { status: 'success' },
      nil: { status: 'success' },
    });
  });

  it('maps TemporaryError to a retry after its delay, 60 s by default', async () => {
    const { outcomes } = await run({
      soon: () => {
        throw new TemporaryError('not ready', { delay: 5 });
      },
      later: async () => {
        throw new TemporaryError('not ready either');
      },
    });
    assert.deepEqual(outcomes, {
      soon: { status: 'temporary', message: 'not ready', delay: 5 },
      later: { status: 'temporary', message: 'not ready either', delay: 60 },
    });
  });

  it('maps PermanentError to permanent, and any other error to a retry in 60 s', async () => {
    const { outcomes } = await run({
      permanent: () => {
        throw new PermanentError('spec.field is invalid');
      },
      arbitrary: () => {
        throw new RangeError('out of range');
      },
      blank: () => {
        throw new Error();
      },
      thrownString: () => {
        throw 'just a string';
      },
    });
    assert.deepEqual(outcomes, {
      permanent: { status: 'permanent', message: 'spec.field is invalid' },
      arbitrary: { status: 'temporary', message: 'out of range', delay: 60 },
      blank: { status: 'temporary', message: 'Error', delay: 60 },
      thrownString: { status: 'temporary', message: 'just a string', delay: 60 },
    });
  });

  it('refuses results JSON cannot hold, permanently', async () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const { outcomes } = await run({
      bigint: () => ({ count: 1n }),
      nestedFunction: () => ({ ok: true, callback: () => {} }),
      topFunction: () => () => {},
      circular: () => circular,
    });
    for (const [id, pattern] of Object.entries({
      bigint: /"count" is a bigint/,
      nestedFunction: /"callback" is a function/,
      topFunction: /it is a function/,
      circular: /circular/,
    })) {
      const outcome = outcomes[id];
      assert.equal(outcome?.status, 'permanent', id);
      assert.match(outcome.message, /^the result cannot be stored in status: /);
      assert.match(outcome.message, pattern);
    }
  });

  it('refuses a TemporaryError delay that is not a duration', () => {
    assert.throws(() => new TemporaryError('x', { delay: -1 }), RangeError);
    assert.throws(() => new TemporaryError('x', { delay: Number.NaN }), RangeError);
  });
});

describe('handler context', () => {
  it("passes Kopf's kwargs", async () => {
    let seen: HandlerContext | undefined;
    const started = new Date(Date.now() - 5_000);
    const request = invocation(['inspect'], { retry: 2, started: started.toISOString() });
    await run(
      {
        inspect: (context) => {
          seen = context;
        },
      },
      request,
    );
    assert.ok(seen);
    assert.deepEqual(seen.body, request.body);
    assert.deepEqual(seen.spec, { field: 'value', items: ['a', 'b'] });
    assert.equal(seen.meta, seen.body.metadata);
    assert.deepEqual(seen.status, {});
    assert.deepEqual(
      { uid: seen.uid, name: seen.name, namespace: seen.namespace },
      { uid: 'uid-1', name: 'kex-1', namespace: 'default' },
    );
    assert.deepEqual(seen.labels, { app: 'demo' });
    assert.deepEqual(seen.annotations, {});
    assert.deepEqual(seen.resource, request.resource);
    assert.equal(seen.reason, 'create');
    assert.equal(seen.retry, 2);
    assert.deepEqual(seen.started, started);
    assert.ok(seen.runtime >= 5_000 && seen.runtime < 60_000, `runtime ${seen.runtime}`);
    assert.equal(seen.idempotencyKey, 'key-inspect');
  });

  it('gives cluster-scoped objects no namespace', async () => {
    const request = invocation(['inspect']);
    delete request.body.metadata.namespace;
    let namespace: string | undefined = 'unset';
    await run(
      {
        inspect: (context) => {
          namespace = context.namespace;
        },
      },
      request,
    );
    assert.equal(namespace, undefined);
  });

  it('freezes the body, so a handler cannot change what the next one sees', async () => {
    const { outcomes } = await run({
      mutate: ({ spec }) => {
        (spec as { items: string[] }).items.push('c');
      },
      read: ({ spec }) => spec,
    });
    assert.equal(outcomes.mutate?.status, 'temporary');
    assert.match((outcomes.mutate as { message: string }).message, /not extensible/);
    assert.deepEqual(outcomes.read, { status: 'success', result: { field: 'value', items: ['a', 'b'] } });
  });

  it('collects log lines with the handler id', async () => {
    const { logs } = await run({
      first: ({ logger, name }) => {
        logger.debug('looking');
        logger.info(`creating ${name}`);
      },
      second: ({ logger }) => {
        logger.warning('careful');
        logger.error('failed');
        throw new Error('boom');
      },
    });
    assert.deepEqual(logs, [
      { level: 'debug', message: 'looking', handler: 'first' },
      { level: 'info', message: 'creating kex-1', handler: 'first' },
      { level: 'warning', message: 'careful', handler: 'second' },
      { level: 'error', message: 'failed', handler: 'second' },
    ]);
  });

  it("runs handlers one at a time, in the request's order", async () => {
    const events: string[] = [];
    const step = (id: string) => async () => {
      events.push(`${id} starts`);
      // Give a concurrent runner every chance to start the next handler before this one ends.
      for (let i = 0; i < 10; i++) await Promise.resolve();
      events.push(`${id} ends`);
    };
    const registry = createRegistry();
    registry.on.create('kex', { id: 'a' }, step('a'));
    registry.on.create('kex', { id: 'b' }, step('b'));
    const { outcomes } = await invoke(invocation(['b', 'a']), registry.handlers);
    assert.deepEqual(events, ['b starts', 'b ends', 'a starts', 'a ends']);
    assert.deepEqual(Object.keys(outcomes), ['b', 'a']);
  });
});
