import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DueHandler, InvocationRequest } from '../protocol/index.ts';
import type { Handler, HandlerContext } from './context.ts';
import { PermanentError, TemporaryError } from './errors.ts';
import { invoke } from './invoke.ts';
import { createRegistry, type On } from './registry.ts';
import { requeue } from './requeue.ts';
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

  it('refuses a TemporaryError delay that is not a duration, or one over a year that the gateway would refuse', () => {
    for (const delay of [-1, Number.NaN, Number.POSITIVE_INFINITY, 366 * 24 * 3600]) {
      assert.throws(
        () => new TemporaryError('x', { delay }),
        /^RangeError: TemporaryError delay must be a number of seconds from 0 to 31536000 \(a year\), got /,
        String(delay),
      );
    }
    assert.equal(new TemporaryError('x', { delay: 365 * 24 * 3600 }).delay, 31536000);
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

/** A registry filled by `register`, and a function that invokes it. */
function service(register: (on: On) => void) {
  const registry = createRegistry();
  register(registry.on);
  return (request: InvocationRequest) => invoke(request, registry.handlers);
}

const UPDATE: Partial<DueHandler> = {
  old: 1,
  new: 3,
  diff: [['change', [], 1, 3]],
};

describe('filters decided in code', () => {
  it('skips the handler, without calling it, when a callback or `when` says no', async () => {
    const called: string[] = [];
    const track = (id: string) => () => {
      called.push(id);
    };
    const run = service((on) => {
      on.create('kex', { id: 'whenNo', when: () => false }, track('whenNo'));
      on.create('kex', { id: 'whenAsyncNo', when: async () => false }, track('whenAsyncNo'));
      on.create('kex', { id: 'whenYes', when: ({ name }) => name === 'kex-1' }, track('whenYes'));
      on.create('kex', { id: 'labelNo', labels: { app: (value) => value === 'other' } }, track('labelNo'));
      on.create('kex', { id: 'labelYes', labels: { app: (value) => value === 'demo' } }, track('labelYes'));
      on.create(
        'kex',
        { id: 'absentLabel', labels: { tier: (value) => value === undefined } },
        track('absentLabel'),
      );
      on.create(
        'kex',
        { id: 'annotationNo', annotations: { note: (value) => value !== undefined } },
        track('annotationNo'),
      );
      on.create(
        'kex',
        { id: 'valueNo', field: 'spec.items', value: (items) => (items as string[]).length > 5 },
        track('valueNo'),
      );
      on.create(
        'kex',
        { id: 'valueYes', field: 'spec.field', value: (value) => value === 'value' },
        track('valueYes'),
      );
      on.create(
        'kex',
        { id: 'paramNo', param: 'no', when: ({ param }) => param === 'yes' },
        track('paramNo'),
      );
    });
    const { outcomes } = await run(
      invocation([
        'whenNo',
        'whenAsyncNo',
        'whenYes',
        'labelNo',
        'labelYes',
        'absentLabel',
        'annotationNo',
        'valueNo',
        'valueYes',
        'paramNo',
      ]),
    );
    assert.deepEqual(called, ['whenYes', 'labelYes', 'absentLabel', 'valueYes']);
    assert.deepEqual(outcomes, {
      whenNo: { status: 'skipped' },
      whenAsyncNo: { status: 'skipped' },
      whenYes: { status: 'success' },
      labelNo: { status: 'skipped' },
      labelYes: { status: 'success' },
      absentLabel: { status: 'success' },
      annotationNo: { status: 'skipped' },
      valueNo: { status: 'skipped' },
      valueYes: { status: 'success' },
      paramNo: { status: 'skipped' },
    });
  });

  it('checks old and new callbacks on updates, against the old and new values', async () => {
    const seen: unknown[] = [];
    const run = service((on) => {
      on.update(
        'kex',
        { id: 'grew', field: 'spec.replicas', old: (v) => v === 1, new: (v) => v === 3 },
        () => 'grew',
      );
      on.update(
        'kex',
        { id: 'shrank', field: 'spec.replicas', new: (v) => (v as number) < 1 },
        () => 'shrank',
      );
      on.field(
        'kex',
        'spec.replicas',
        { id: 'fieldNew', new: (v, ctx) => seen.push([v, ctx.reason]) > 0 },
        () => 'f',
      );
    });
    const update = await run(invocation(['grew', 'shrank', 'fieldNew'], UPDATE, { reason: 'update' }));
    assert.deepEqual(update.outcomes, {
      grew: { status: 'success', result: 'grew' },
      shrank: { status: 'skipped' },
      fieldNew: { status: 'success', result: 'f' },
    });
    assert.deepEqual(seen, [[3, 'update']]);
    // On a creation there is no change to compare: old/new do not apply, as the protocol says.
    const create = await run(invocation(['fieldNew'], { new: 5 }));
    assert.deepEqual(create.outcomes, { fieldNew: { status: 'success', result: 'f' } });
    assert.deepEqual(seen, [[3, 'update']]);
  });

  it('treats a callback that throws as a failure of the handler', async () => {
    const run = service((on) => {
      on.create(
        'kex',
        {
          id: 'broken',
          backoff: 7,
          when: () => {
            throw new Error('cannot decide');
          },
        },
        () => 'never',
      );
    });
    const { outcomes } = await run(invocation(['broken']));
    assert.deepEqual(outcomes, { broken: { status: 'temporary', message: 'cannot decide', delay: 7 } });
  });
});

describe('kwargs of the extended protocol', () => {
  it('passes old, new, diff, param and the reason', async () => {
    let seen: HandlerContext | undefined;
    const run = service((on) => {
      on.update('kex', { id: 'inspect', field: 'spec.replicas', param: { tier: 'gold' } }, (context) => {
        seen = context;
      });
    });
    await run(invocation(['inspect'], UPDATE, { reason: 'update' }));
    assert.ok(seen);
    assert.deepEqual(
      { old: seen.old, new: seen.new, diff: seen.diff, param: seen.param, reason: seen.reason },
      { old: 1, new: 3, diff: [['change', [], 1, 3]], param: { tier: 'gold' }, reason: 'update' },
    );
    assert.equal(seen.event, undefined);
  });

  it('leaves old, new and diff undefined when the gateway sends none', async () => {
    let seen: HandlerContext | undefined;
    await service((on) => {
      on.create('kex', { id: 'inspect' }, (context) => {
        seen = context;
      });
    })(invocation(['inspect']));
    assert.ok(seen);
    assert.deepEqual(
      [seen.old, seen.new, seen.diff, seen.param],
      [undefined, undefined, undefined, undefined],
    );
  });

  it('gives event handlers the type of the watch event', async () => {
    const run = service((on) => {
      on.event('kex', function seen({ event, reason }) {
        return `${reason}:${event}`;
      });
    });
    const { outcomes } = await run(invocation(['seen'], {}, { reason: 'event', event: 'MODIFIED' }));
    assert.deepEqual(outcomes, { seen: { status: 'success', result: 'event:MODIFIED' } });
  });

  it('returns the patch and the events a handler made, only when there are any', async () => {
    const run = service((on) => {
      on.create('kex', function labelled({ patch, events }) {
        patch.metadata = { labels: { handled: 'yes' } };
        patch.status = { phase: 'Ready' };
        events.normal('Created', 'children created');
        events.warning('Slow', 'took long');
        return 'ok';
      });
      on.create('kex', function quiet({ patch }) {
        patch.spec = undefined;
      });
    });
    const { outcomes } = await run(invocation(['labelled', 'quiet']));
    assert.deepEqual(outcomes, {
      labelled: {
        status: 'success',
        result: 'ok',
        patch: { metadata: { labels: { handled: 'yes' } }, status: { phase: 'Ready' } },
        events: [
          { type: 'Normal', reason: 'Created', message: 'children created' },
          { type: 'Warning', reason: 'Slow', message: 'took long' },
        ],
      },
      quiet: { status: 'success' },
    });
  });

  it('keeps each handler its own patch and events', async () => {
    const run = service((on) => {
      on.create('kex', function first({ patch, events }) {
        patch.spec = { a: 1 };
        events.normal('First', 'one');
      });
      on.create('kex', function second({ patch, events }) {
        assert.deepEqual(patch, {});
        patch.spec = { b: 2 };
        events.normal('Second', 'two');
      });
    });
    const { outcomes } = await run(invocation(['first', 'second']));
    assert.deepEqual(outcomes.first?.patch, { spec: { a: 1 } });
    assert.deepEqual(outcomes.second?.patch, { spec: { b: 2 } });
    assert.deepEqual(outcomes.second?.events, [{ type: 'Normal', reason: 'Second', message: 'two' }]);
  });

  it('refuses a patch JSON cannot hold, permanently', async () => {
    const { outcomes } = await service((on) => {
      on.create('kex', function bad({ patch }) {
        patch.spec = { when: 1n };
        return 'done';
      });
    })(invocation(['bad']));
    assert.equal(outcomes.bad?.status, 'permanent');
    assert.match(
      (outcomes.bad as { message: string }).message,
      /^the patch cannot be applied: "when" is a bigint/,
    );
  });
});

describe('memo', () => {
  it('starts from the request, is shared in order, and returns what changed', async () => {
    const run = service((on) => {
      on.create('kex', function first({ memo }) {
        memo.count = (memo.count as number) + 1;
        memo.added = { by: 'first' };
        delete memo.stale;
        (memo.nested as { items: string[] }).items.push('c');
      });
      on.create('kex', function second({ memo }) {
        return { count: memo.count, added: memo.added };
      });
    });
    const memo = { count: 1, stale: true, kept: 'same', nested: { items: ['a', 'b'] } };
    const response = await run(invocation(['first', 'second'], {}, { memo }));
    assert.deepEqual(response.outcomes.second, {
      status: 'success',
      result: { count: 2, added: { by: 'first' } },
    });
    assert.deepEqual(response.memo, {
      count: 2,
      added: { by: 'first' },
      nested: { items: ['a', 'b', 'c'] },
      stale: null,
    });
    assert.deepEqual(memo.nested.items, ['a', 'b'], "the request's memo is not changed");
  });

  it('reports keys set to null or undefined as removed, and only if they were there', async () => {
    const response = await service((on) => {
      on.create('kex', function clear({ memo }) {
        memo.gone = null;
        memo.alsoGone = undefined;
        memo.neverThere = null;
      });
    })(invocation(['clear'], {}, { memo: { gone: 1, alsoGone: 2 } }));
    assert.deepEqual(response.memo, { gone: null, alsoGone: null });
  });

  it('answers no memo when nothing changed, even with no memo in the request', async () => {
    const run = service((on) => {
      on.create('kex', function reader({ memo }) {
        return memo.count ?? 'none';
      });
    });
    const without = await run(invocation(['reader']));
    assert.deepEqual(without.outcomes.reader, { status: 'success', result: 'none' });
    assert.equal('memo' in without, false);
    const unchanged = await run(invocation(['reader'], {}, { memo: { count: 4 } }));
    assert.equal('memo' in unchanged, false);
  });

  it('starts each call from an empty memo when the request has one, and leaves the request as it was', async () => {
    const run = service((on) => {
      on.create('kex', function count({ memo }) {
        memo.count = ((memo.count as number | undefined) ?? 0) + 1;
      });
    });
    const memo = {};
    const first = await run(invocation(['count'], {}, { memo }));
    const second = await run(invocation(['count'], {}, { memo }));
    assert.deepEqual(first.memo, { count: 1 });
    assert.deepEqual(second.memo, { count: 1 });
    assert.deepEqual(memo, {});
  });

  it('logs, and does not keep, a value JSON cannot hold', async () => {
    const response = await service((on) => {
      on.create('kex', function keep({ memo }) {
        memo.callback = () => {};
        memo.fine = 'yes';
      });
    })(invocation(['keep']));
    assert.deepEqual(response.memo, { fine: 'yes' });
    assert.deepEqual(response.logs, [
      { level: 'error', message: 'memo "callback" cannot be kept: it is a function, which JSON cannot hold' },
    ]);
  });
});

describe('requeue', () => {
  it('asks a reconcile handler to be called again, with or without a result', async () => {
    const run = service((on) => {
      on.reconcile('kex', function waiting() {
        return requeue(30);
      });
      on.reconcile('kex', function polling() {
        return requeue(2.5, { phase: 'Pending' });
      });
    });
    const { outcomes } = await run(invocation(['waiting', 'polling'], {}, { reason: 'reconcile' }));
    assert.deepEqual(outcomes, {
      waiting: { status: 'success', requeueAfter: 30 },
      polling: { status: 'success', result: { phase: 'Pending' }, requeueAfter: 2.5 },
    });
  });

  it('is refused from other kinds, permanently', async () => {
    const { outcomes } = await service((on) => {
      on.create('kex', function eager() {
        return requeue(30);
      });
    })(invocation(['eager']));
    assert.deepEqual(outcomes, {
      eager: {
        status: 'permanent',
        message: 'requeue() is for reconcile handlers; a create handler cannot be requeued',
      },
    });
  });

  it('needs a number of seconds above 0, at most a year', () => {
    for (const seconds of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 366 * 24 * 3600, '5' as never]) {
      assert.throws(
        () => requeue(seconds),
        /requeue\(\) needs a number of seconds above 0, at most 31536000 \(a year\)/,
        String(seconds),
      );
    }
  });
});

describe('errors of the extended protocol', () => {
  it("retries arbitrary errors after the handler's backoff; TemporaryError keeps its own delay", async () => {
    const run = service((on) => {
      on.update('kex', { id: 'quick', backoff: 5 }, () => {
        throw new Error('flaky');
      });
      on.update('kex', { id: 'immediate', backoff: 0 }, () => {
        throw new Error('flaky');
      });
      on.update('kex', { id: 'explicit', backoff: 5 }, () => {
        throw new TemporaryError('later', { delay: 90 });
      });
      on.update('kex', { id: 'default' }, () => {
        throw new Error('flaky');
      });
    });
    const { outcomes } = await run(
      invocation(['quick', 'immediate', 'explicit', 'default'], UPDATE, { reason: 'update' }),
    );
    assert.deepEqual(outcomes, {
      quick: { status: 'temporary', message: 'flaky', delay: 5 },
      immediate: { status: 'temporary', message: 'flaky', delay: 0 },
      explicit: { status: 'temporary', message: 'later', delay: 90 },
      default: { status: 'temporary', message: 'flaky', delay: 60 },
    });
  });

  it('logs every error of an event handler and never retries it', async () => {
    const run = service((on) => {
      on.event('kex', { id: 'arbitrary' }, () => {
        throw new Error('boom');
      });
      on.event('kex', { id: 'temporary' }, () => {
        throw new TemporaryError('not now', { delay: 5 });
      });
      on.event('kex', { id: 'permanent' }, () => {
        throw new PermanentError('never');
      });
    });
    const { outcomes, logs } = await run(
      invocation(['arbitrary', 'temporary', 'permanent'], {}, { reason: 'event', event: 'ADDED' }),
    );
    assert.deepEqual(outcomes, {
      arbitrary: { status: 'permanent', message: 'boom' },
      temporary: { status: 'permanent', message: 'not now' },
      permanent: { status: 'permanent', message: 'never' },
    });
    assert.deepEqual(logs, [
      { level: 'error', message: 'event handler failed, not to be retried: boom', handler: 'arbitrary' },
      { level: 'error', message: 'event handler failed, not to be retried: not now', handler: 'temporary' },
      { level: 'error', message: 'event handler failed, not to be retried: never', handler: 'permanent' },
    ]);
  });

  it('keeps the effects a handler made before it failed', async () => {
    const run = service((on) => {
      on.delete('kex', function half({ patch, events, memo }) {
        patch.metadata = { annotations: { step: '1' } };
        events.warning('Partial', 'step 1 of 2');
        memo.step = 1;
        throw new TemporaryError('step 2 failed', { delay: 3 });
      });
      on.delete('kex', function refused({ patch }) {
        patch.status = { phase: 'Failed' };
        throw new PermanentError('cannot');
      });
    });
    const response = await run(invocation(['half', 'refused'], {}, { reason: 'delete' }));
    assert.deepEqual(response.outcomes, {
      half: {
        status: 'temporary',
        message: 'step 2 failed',
        delay: 3,
        patch: { metadata: { annotations: { step: '1' } } },
        events: [{ type: 'Warning', reason: 'Partial', message: 'step 1 of 2' }],
      },
      refused: { status: 'permanent', message: 'cannot', patch: { status: { phase: 'Failed' } } },
    });
    assert.deepEqual(response.memo, { step: 1 });
  });
});

describe('objects to apply', () => {
  it('returns what a handler asks the gateway to create or update, even when it then fails', async () => {
    const { outcomes } = await run({
      make_child: ({ name, apply }) => {
        apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${name}-child` }, data: { a: 'b' } });
        throw new TemporaryError('not finished yet', { delay: 1 });
      },
    });
    assert.equal(outcomes.make_child?.status, 'temporary');
    assert.deepEqual(outcomes.make_child?.apply, [
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kex-1-child' }, data: { a: 'b' } },
    ]);
  });
});

describe('the errors option', () => {
  it('makes an unexpected error a retry after backoff, a failure for good, or a logged success', async () => {
    const fail = () => {
      throw new RangeError('boom');
    };
    const run = service((on) => {
      on.create('kex', { id: 'unset', backoff: 7 }, fail);
      on.create('kex', { id: 'temporary', errors: 'temporary', backoff: 7 }, fail);
      on.create('kex', { id: 'permanent', errors: 'permanent' }, fail);
      on.create('kex', { id: 'ignored', errors: 'ignored' }, ({ patch, events }) => {
        patch.metadata = { annotations: { tried: 'yes' } };
        events.normal('Trying', 'once');
        throw new Error('not worth a retry');
      });
    });
    const { outcomes, logs } = await run(invocation(['unset', 'temporary', 'permanent', 'ignored']));
    assert.deepEqual(outcomes, {
      unset: { status: 'temporary', message: 'boom', delay: 7 },
      temporary: { status: 'temporary', message: 'boom', delay: 7 },
      permanent: { status: 'permanent', message: 'boom' },
      ignored: {
        status: 'success',
        patch: { metadata: { annotations: { tried: 'yes' } } },
        events: [{ type: 'Normal', reason: 'Trying', message: 'once' }],
      },
    });
    assert.deepEqual(logs, [
      {
        level: 'error',
        message: "handler failed, ignored (errors: 'ignored'): not worth a retry",
        handler: 'ignored',
      },
    ]);
  });

  it('leaves TemporaryError and PermanentError as they are', async () => {
    const run = service((on) => {
      on.update('kex', { id: 'later', errors: 'ignored' }, () => {
        throw new TemporaryError('not yet', { delay: 3 });
      });
      on.update('kex', { id: 'never', errors: 'ignored' }, () => {
        throw new PermanentError('no');
      });
      on.update('kex', { id: 'retried', errors: 'permanent' }, () => {
        throw new TemporaryError('soon', { delay: 1 });
      });
    });
    const { outcomes, logs } = await run(
      invocation(['later', 'never', 'retried'], UPDATE, { reason: 'update' }),
    );
    assert.deepEqual(outcomes, {
      later: { status: 'temporary', message: 'not yet', delay: 3 },
      never: { status: 'permanent', message: 'no' },
      retried: { status: 'temporary', message: 'soon', delay: 1 },
    });
    assert.deepEqual(logs, []);
  });

  it('applies to timers, daemons, reconcile handlers, and to the sub-handlers a handler executes', async () => {
    const fail = () => {
      throw new Error('boom');
    };
    const reasons = { timer: 'timer', daemon: 'daemon', reconcile: 'reconcile' } as const;
    for (const [kind, reason] of Object.entries(reasons)) {
      const { outcomes } = await service((on) => {
        const register = on[kind as keyof typeof reasons] as (...args: unknown[]) => void;
        register(
          'kex',
          { id: 'ignored', errors: 'ignored', ...(kind === 'timer' ? { interval: 1 } : {}) },
          fail,
        );
        register(
          'kex',
          { id: 'permanent', errors: 'permanent', ...(kind === 'timer' ? { interval: 1 } : {}) },
          fail,
        );
      })(invocation(['ignored', 'permanent'], {}, { reason }));
      assert.deepEqual(
        outcomes,
        { ignored: { status: 'success' }, permanent: { status: 'permanent', message: 'boom' } },
        kind,
      );
    }
    const { outcomes } = await service((on) => {
      on.create('kex', { id: 'parent', errors: 'ignored' }, async ({ execute }) => {
        await execute({ first: fail, second: () => 'ran' });
        return 'all ran';
      });
    })(invocation(['parent']));
    assert.deepEqual(outcomes.parent, {
      status: 'success',
      result: 'all ran',
      subhandlers: { first: { status: 'success' }, second: { status: 'success', result: 'ran' } },
    });
  });
});
