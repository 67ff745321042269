/**
 * Sharding on the real control plane: gateways started with `sharding` share the objects of their
 * identity by a consistent-hash ring of their ids, each object handled by one of them; when one
 * leaves and another joins, every gateway stops before any starts its new share, so no object is
 * handled by two at once, none is dropped, and timers fire on one replica only. An index stays whole on
 * every replica, whichever owns the object that reads it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Index, operator } from '../../functions/index.ts';
import { freeze, resume } from '../../gateway/peering/freeze.ts';
import { testNamespace } from '../support/cluster.ts';
import { assertCalledOnceButAfterFencedWrites } from '../support/fencing.ts';
import { sample, scrape } from '../support/metrics.ts';
import {
  applyFile,
  createKopfExamples,
  createResults,
  eventually,
  kubeClient,
  memoryLogger,
  objectNames,
  type RunningOperator,
  runOperator,
} from '../support/operator.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);

interface Call {
  gateway: string;
  name: string;
  handler: string;
  started: number;
  ended: number;
}

function recordingOperator(gateway: string, calls: Call[]) {
  const op = operator({ name: 'sharded' });
  op.on.create('kopfexamples', async function create_fn({ name }) {
    const started = Date.now();
    await sleep(10); // a handler that takes a while: calls are in flight when the members change
    calls.push({ gateway, name, handler: 'create_fn', started, ended: Date.now() });
    return { by: gateway };
  });
  op.on.timer('kopfexamples', { interval: 0.3, labels: { ticking: 'yes' } }, function tick_fn({ name }) {
    const now = Date.now();
    calls.push({ gateway, name, handler: 'tick_fn', started: now, ended: now });
  });
  return op;
}

/** Who handles each object now: the gateway that called it last. */
function lastCallers(calls: readonly Call[]): Map<string, string> {
  const last = new Map<string, Call>();
  for (const call of calls) {
    const before = last.get(call.name);
    if (!before || call.started >= before.started) last.set(call.name, call);
  }
  return new Map([...last].map(([name, call]) => [name, call.gateway]));
}

describe('sharding', () => {
  it('shares the objects among three gateways, each handled once, and fires each timer on one of them', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const calls: Call[] = [];
    const logs = new Map<string, ReturnType<typeof memoryLogger>>();
    const gateways: RunningOperator[] = [];
    for (const id of ['shard-a', 'shard-b', 'shard-c']) {
      const logger = memoryLogger();
      logs.set(id, logger);
      const gateway = await runOperator(recordingOperator(id, calls), {
        namespaces: [namespace],
        transport: 'in-process',
        peering: { namespace, id, sharding: true },
        logger,
        metrics: '127.0.0.1:0',
      });
      gateways.push(gateway);
      t.after(() => gateway.stop());
    }
    await eventually(
      'the three gateways running their shares',
      async () =>
        gateways.every(({ gateway }) => gateway.handling) &&
        [...logs.values()].every((log) => log.lines.some((line) => line.includes('a 1/3 share')))
          ? true
          : undefined,
      30_000,
    );
    const names = objectNames('kex', 900);
    await createKopfExamples(namespace, names);
    const ticking = objectNames('tick', 12);
    await createKopfExamples(namespace, ticking, { ticking: 'yes' });
    await eventually(
      'every object handled',
      async () =>
        (await createResults(namespace)).size === names.length + ticking.length ? true : undefined,
      60_000,
    );
    await eventually(
      'every ticking object ticked three times',
      async () =>
        ticking.every(
          (name) => calls.filter((call) => call.handler === 'tick_fn' && call.name === name).length >= 3,
        ) || undefined,
    );

    const creates = calls.filter((call) => call.handler === 'create_fn');
    const handlers = lastCallers(creates);
    assert.equal(handlers.size, names.length + ticking.length, 'every object was called');
    assertCalledOnceButAfterFencedWrites(creates, logs, t);
    const handledBy = (id: string) => [...handlers.values()].filter((gateway) => gateway === id).length;
    for (const id of ['shard-a', 'shard-b', 'shard-c']) {
      const share = handledBy(id) / handlers.size;
      t.diagnostic(`${id}: ${(share * 100).toFixed(1)}%`);
      assert.ok(share >= 0.2 && share <= 0.47, `${id} handled ${(share * 100).toFixed(1)}%`);
    }
    // Each sees every object and owns its share; together they own them all, as the alert on these
    // gauges (docs/observability.md) expects.
    const owned: number[] = [];
    for (const [index, { gateway }] of gateways.entries()) {
      const scraped = await scrape(gateway);
      const resource = { resource: 'kopfexamples.kopf.dev/v1' };
      assert.equal(sample(scraped, 'causeway_objects', resource), handlers.size);
      owned.push(sample(scraped, 'causeway_owned_objects', resource));
      const id = ['shard-a', 'shard-b', 'shard-c'][index] as string;
      assert.equal(owned.at(-1), handledBy(id), `${id} owns what it handled`);
    }
    assert.equal(
      owned.reduce((sum, each) => sum + each, 0),
      handlers.size,
    );
    for (const name of ticking) {
      const tickers = new Set(
        calls.filter((call) => call.handler === 'tick_fn' && call.name === name).map((call) => call.gateway),
      );
      assert.equal(tickers.size, 1, `${name} ticked on ${[...tickers].join(', ')}`);
    }
  });

  it('hands the shares over when a gateway leaves and another joins: none dropped, none handled by two at once', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const calls: Call[] = [];
    const logs = new Map<string, ReturnType<typeof memoryLogger>>();
    const start = async (id: string) => {
      const logger = memoryLogger();
      logs.set(id, logger);
      const gateway = await runOperator(recordingOperator(id, calls), {
        namespaces: [namespace],
        transport: 'in-process',
        peering: { namespace, id, sharding: true },
        settings: { processing: { concurrency: 4 } },
        logger,
      });
      let stopped = false;
      t.after(() => (stopped ? undefined : gateway.stop()));
      return {
        gateway: gateway.gateway,
        stop: async () => {
          stopped = true;
          await gateway.stop();
        },
      };
    };
    const [a, b, c] = [await start('shard-a'), await start('shard-b'), await start('shard-c')];
    await eventually(
      'the three gateways running their shares',
      async () => (a.gateway.handling && b.gateway.handling && c.gateway.handling) || undefined,
      30_000,
    );
    const names = objectNames('kex', 600);
    await createKopfExamples(namespace, names);
    await eventually('a part of the backlog handled', async () => (calls.length >= 150 ? true : undefined));
    await b.stop();
    const d = await start('shard-d');
    await eventually(
      'every object handled',
      async () => ((await createResults(namespace)).size === names.length ? true : undefined),
      60_000,
    );

    assert.equal(new Set(calls.map((call) => call.name)).size, names.length, 'every object was called');
    assertCalledOnceButAfterFencedWrites(calls, logs, t);
    const gateways = new Set(calls.map((call) => call.gateway));
    t.diagnostic(
      [...gateways].map((id) => `${id}: ${calls.filter((call) => call.gateway === id).length}`).join(', '),
    );
    assert.ok(
      calls.some((call) => call.gateway === 'shard-d'),
      'the gateway that joined took a share',
    );
    assert.ok(d.gateway.handling, 'the gateway that joined runs its share');
  });

  it('keeps every index whole on every replica: a handler on either sees every object', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const seen: Array<{ gateway: string; name: string; indexed: number }> = [];
    const indexingOperator = (gateway: string) => {
      const op = operator({ name: 'sharded' });
      op.index('kopfexamples', { id: 'names' }, { value: 'metadata.name' });
      op.on.create('kopfexamples', { indexes: ['names'] }, function create_fn({ name, indexes }) {
        seen.push({ gateway, name, indexed: (indexes.names as Index<string>).get(null)?.length ?? 0 });
      });
      return op;
    };
    // Frozen until both have joined, so that both take a share of objects listed at their start.
    await freeze({
      client,
      namespace,
      prefix: 'causeway.dev',
      message: 'until both join',
      holder: 'test',
      waitS: 0,
    });
    const names = objectNames('kex', 40);
    await createKopfExamples(namespace, names);
    const logs = [memoryLogger(), memoryLogger()];
    for (const [index, id] of ['shard-a', 'shard-b'].entries()) {
      const gateway = await runOperator(indexingOperator(id), {
        namespaces: [namespace],
        transport: 'in-process',
        peering: { namespace, id, sharding: true },
        logger: logs[index],
      });
      t.after(() => gateway.stop());
    }
    await eventually(
      'both gateways paused by the freeze',
      async () =>
        logs.every((log) => log.lines.some((line) => line.includes('peering is frozen'))) || undefined,
    );
    await resume({ client, namespace, prefix: 'causeway.dev' });
    await eventually(
      'every object handled',
      async () => (seen.length >= names.length ? true : undefined),
      30_000,
    );

    assert.deepEqual(
      new Set(seen.map((call) => call.gateway)),
      new Set(['shard-a', 'shard-b']),
      'both took a share',
    );
    for (const call of seen) {
      assert.equal(
        call.indexed,
        names.length,
        `${call.name} on ${call.gateway} saw ${call.indexed} of ${names.length}`,
      );
    }
  });
});
