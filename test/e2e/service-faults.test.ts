/**
 * Function services that fail as real ones do, behind a faulty proxy (test/support/faulty-service.ts):
 * a share of the calls answered with a 500, no answer, a closed connection, a truncated body, a body
 * that is not JSON or one of the wrong schema. Every object ends handled, each handler's effect made
 * once, at a bounded cost in API writes per failed attempt and with the backoff configured; a service
 * killed -9 mid-call is called again with the same idempotency key once it is back; and a service that
 * is down has its circuit opened: no calls and no writes while down, and its work done promptly when
 * it returns. The figures are in docs/reliability.md ("Failing function services").
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { operator } from '../../functions/index.ts';
import { serveFetch } from '../../gateway/cli/commands/serve/serve.ts';
import { type Gateway, startGateway } from '../../gateway/gateway.ts';
import type { SettingsPatch } from '../../gateway/settings.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  FAULTS,
  type FaultyService,
  type SentHandler,
  startFaultyService,
} from '../support/faulty-service.ts';
import { everythingHandled, sample, scrape } from '../support/metrics.ts';
import {
  applyFile,
  createKopfExamples,
  createResults,
  eventually,
  KOPFEXAMPLES_SCOPE,
  kubeClient,
  kubeConfig,
  memoryLogger,
  objectNames,
  TEST_SECRET,
} from '../support/operator.ts';
import { type CliProcess, causeway, freePort } from '../support/processes.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const RETRY_DELAYS_S = [0.2, 0.4, 0.8];
/** Short, as a timeout fault waits it out; not shorter: on a busy 2-core machine a call can take 1 s. */
const CALL_TIMEOUT_MS = 2000;
/** A failed attempt's writes: its progress in one status patch, and a HandlerRetrying event. */
const WRITES_PER_FAILED_ATTEMPT = 2;

/** An operator whose create handler stores a result and posts one event: its effects, to count. */
function countedOperator() {
  const op = operator({ name: 'faulty', secret: TEST_SECRET });
  op.on.create('kopfexamples', function create_fn({ name, events }) {
    events.normal('Handled', `create_fn handled ${name}`);
    return { handled: name };
  });
  return op;
}

/** The operator served on loopback behind a faulty proxy, and a gateway calling it through the proxy. */
async function behindFaultyProxy(
  t: TestContext,
  namespace: string,
  faultShare: number,
  calls: SettingsPatch['calls'],
): Promise<{ gateway: Gateway; proxy: FaultyService; logger: ReturnType<typeof memoryLogger> }> {
  const server = await serveFetch(countedOperator(), { port: 0, host: '127.0.0.1' });
  t.after(() => server.close());
  const proxy = await startFaultyService(server.url, faultShare);
  t.after(() => proxy.close());
  const logger = memoryLogger();
  const gateway = await startGateway({
    functions: [{ name: 'faulty', url: proxy.url, scope: KOPFEXAMPLES_SCOPE }],
    secret: new TextEncoder().encode(TEST_SECRET),
    kubeconfig: await kubeConfig(),
    namespaces: [namespace],
    metrics: '127.0.0.1:0',
    logger,
    settings: { calls: { timeoutMs: CALL_TIMEOUT_MS, serviceRetryDelaysS: RETRY_DELAYS_S, ...calls } },
  });
  t.after(() => gateway.stop());
  await gateway.synced;
  return { gateway, proxy, logger };
}

/** The gateway's API writes so far, every verb and subresource. */
async function apiWrites(gateway: Gateway): Promise<number> {
  const all = await scrape(gateway);
  return [...all].reduce(
    (sum, [key, value]) => (key.startsWith('causeway_api_writes_total{') ? sum + value : sum),
    0,
  );
}

/** The `Handled` events of the namespace, by the name of the object each is about. */
async function handledEvents(namespace: string): Promise<Map<string, number>> {
  const client = await kubeClient();
  const list = await client.get<{
    items: Array<KubernetesObject & { reason: string; involvedObject: { name: string } }>;
  }>(`/api/v1/namespaces/${namespace}/events`);
  const counts = new Map<string, number>();
  for (const event of list.items.filter((item) => item.reason === 'Handled'))
    counts.set(event.involvedObject.name, (counts.get(event.involvedObject.name) ?? 0) + 1);
  return counts;
}

describe('a function service that fails 30% of its calls', () => {
  it('has every object handled once, at two writes per failed attempt, with the backoff configured', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    // One call per request, so that the share of faulty requests is the share of faulty calls.
    const { gateway, proxy, logger } = await behindFaultyProxy(t, namespace, 0.3, { callBatchSize: 1 });
    const writesBefore = await apiWrites(gateway);
    const names = objectNames('faults', 20);
    await createKopfExamples(namespace, names);

    await eventually(
      'every object handled',
      async () => ((await createResults(namespace)).size === names.length ? true : undefined),
      60_000,
    );
    await eventually('every Handled event posted', async () =>
      (await handledEvents(namespace)).size === names.length ? true : undefined,
    );
    await everythingHandled(gateway);
    const results = await createResults(namespace);
    for (const name of names) assert.deepEqual(results.get(name), { handled: name });
    const events = await handledEvents(namespace);
    for (const name of names) assert.equal(events.get(name), 1, `${name}: its handler's event posted once`);

    const faulty = proxy.invocations.filter((invocation) => invocation.fault !== undefined);
    assert.deepEqual(
      new Set(faulty.map((invocation) => invocation.fault)),
      new Set(FAULTS),
      'every kind of fault met',
    );
    // Failed as the gateway saw them: the faults, and any call of a busy machine past its deadline.
    const failed = sample(await scrape(gateway), 'causeway_handler_calls_total', {
      service: 'faulty',
      handler: 'create_fn',
      cause: 'create',
      outcome: 'failed',
    });
    assert.ok(failed >= faulty.length, `${failed} failed calls, ${faulty.length} of them faults`);
    const writes = (await apiWrites(gateway)) - writesBefore;
    // Each object handled costs its status patch and its handler's event; each failed attempt at most its own.
    const bound = 2 * names.length + WRITES_PER_FAILED_ATTEMPT * failed;
    t.diagnostic(
      `${proxy.invocations.length} calls, ${faulty.length} faults, ${failed} failed; ${writes} API writes (bound ${bound})`,
    );
    assert.ok(writes <= bound, `${writes} writes for ${names.length} objects and ${failed} failed attempts`);
    assert.ok(writes > 2 * names.length, 'the failed attempts were recorded (progress, events)');

    // Per object: one idempotency key, and each failure recorded (its retry counted) followed by the
    // next attempt after its configured delay at the earliest. An attempt that failed as the circuit
    // opened (a busy machine's calls past their deadline) records nothing: its retry is made again.
    const circuitOpened = logger.lines.some((line) => line.includes('function service down'));
    for (const name of names) {
      const calls = proxy.invocations.flatMap((invocation) =>
        invocation.calls
          .filter((call) => call.object === name)
          .map((call) => ({ ...invocation, ...(call.handlers[0] as SentHandler) })),
      );
      assert.equal(new Set(calls.map((call) => call.idempotencyKey)).size, 1, `${name}: one idempotency key`);
      assert.equal(calls[0]?.retry, 0);
      assert.equal(calls.at(-1)?.fault, undefined, `${name}: handled by its last call`);
      for (const [index, call] of calls.slice(0, -1).entries()) {
        const next = calls[index + 1] as (typeof calls)[number];
        if (next.retry === call.retry && circuitOpened) continue;
        assert.equal(next.retry, call.retry + 1, `${name}: its failure recorded`);
        const delayMs = (RETRY_DELAYS_S[Math.min(call.retry, RETRY_DELAYS_S.length - 1)] as number) * 1000;
        // From the attempt's end (a timeout's: the gateway's deadline) to the next one's start.
        const waitedMs = next.at - (call.endedAt as number);
        assert.ok(
          waitedMs >= delayMs,
          `${name}: retry ${next.retry} ${waitedMs} ms after the failure, not ${delayMs}`,
        );
        assert.ok(waitedMs < delayMs + 5000, `${name}: retry ${next.retry} ${waitedMs} ms after the failure`);
      }
    }
  });
});

describe('a function service killed -9 mid-call', () => {
  it('has every object handled once it is back, a repeated call with the same idempotency key', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const logPath = join(mkdtempSync(join(tmpdir(), 'causeway-faults-')), 'calls.log');
    writeFileSync(logPath, '');
    const port = await freePort();
    const env = { ...process.env, CAUSEWAY_SECRET: TEST_SECRET, CAUSEWAY_CALL_LOG: logPath };
    const serve = async (callDelayMs: number) => {
      const args = [
        'serve',
        'test/fixtures/call-log-operator.ts',
        '--port',
        String(port),
        '--host',
        '127.0.0.1',
      ];
      const service = causeway(args, { ...env, CAUSEWAY_CALL_DELAY_MS: String(callDelayMs) });
      t.after(() => service.stop('SIGKILL'));
      await service.waitFor(/listening on/);
      return service;
    };
    let service: CliProcess = await serve(3000);
    const gateway = await startGateway({
      functions: [{ name: 'call-log', url: `http://127.0.0.1:${port}`, scope: KOPFEXAMPLES_SCOPE }],
      secret: new TextEncoder().encode(TEST_SECRET),
      kubeconfig: await kubeConfig(),
      namespaces: [namespace],
      logger: memoryLogger(),
      settings: { calls: { serviceRetryDelaysS: RETRY_DELAYS_S } },
    });
    t.after(() => gateway.stop());
    await gateway.synced;
    const names = objectNames('killed', 5);
    await createKopfExamples(namespace, names);
    const calls = () =>
      readFileSync(logPath, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split(' ') as [string, string]);

    // Each call waits 3 s once recorded: killed now, the service dies with calls in flight.
    await eventually('a call under way', async () => (calls().length > 0 ? true : undefined));
    assert.equal(await service.stop('SIGKILL'), 'SIGKILL');
    const inFlight = new Set(calls().map(([name]) => name));
    service = await serve(0);
    await eventually(
      'every object handled',
      async () => ((await createResults(namespace)).size === names.length ? true : undefined),
      30_000,
    );

    const byName = Map.groupBy(calls(), ([name]) => name);
    assert.deepEqual([...byName.keys()].sort(), names, 'every object was called');
    for (const name of inFlight)
      assert.ok((byName.get(name)?.length ?? 0) > 1, `${name}, in flight at the kill, was called again`);
    for (const [name, ofName] of byName) {
      assert.equal(
        new Set(ofName.map(([, key]) => key)).size,
        1,
        `${name} was called with one idempotency key: ${JSON.stringify(ofName)}`,
      );
    }
  });
});

describe('a function service down for a while', () => {
  it('has its circuit opened: no call and no write while down, and its work done promptly once back', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const threshold = 3;
    const { gateway, proxy, logger } = await behindFaultyProxy(t, namespace, 0, {
      breakerThreshold: threshold,
      // The breaker counts requests: one call each, the calls that fail before it opens are
      // threshold - 1 (batched, those of threshold - 1 requests).
      callBatchSize: 1,
      manifestRefreshMs: 600_000, // its health checks would be taken for the breaker's
    });
    await createKopfExamples(namespace, ['before']);
    await eventually('the object made before the outage handled', async () =>
      (await createResults(namespace)).get('before'),
    );
    await everythingHandled(gateway);
    const writesBefore = await apiWrites(gateway);

    proxy.setDown(true);
    const names = objectNames('outage', 6);
    const callsBefore = proxy.invocations.length;
    await createKopfExamples(namespace, names);
    await eventually('the circuit open', async () =>
      sample(await scrape(gateway), 'causeway_function_breaker_open', { service: 'faulty' }) === 1
        ? true
        : undefined,
    );
    const waiting = (name: string) =>
      logger.lines.some(
        (line) =>
          line.includes(`[${namespace}/${name}]`) && /waiting for a function service that is down/.test(line),
      );
    await eventually('every object waiting for the service', async () =>
      names.every(waiting) ? true : undefined,
    );
    const writesWhenOpen = await apiWrites(gateway);
    const callsWhenOpen = proxy.invocations.length;
    const probesWhenOpen = proxy.healthChecks.length;
    await eventually('three health checks more while open', async () =>
      proxy.healthChecks.length >= probesWhenOpen + 3 ? true : undefined,
    );

    assert.equal(proxy.invocations.length, callsWhenOpen, 'no call while open');
    assert.equal(await apiWrites(gateway), writesWhenOpen, 'no write while open');
    const calledWhileDown = proxy.invocations.length - callsBefore;
    assert.ok(
      calledWhileDown <= names.length + threshold - 1,
      `${calledWhileDown} calls: each object's first, and a retry at most of those failed before the circuit opened`,
    );
    const writesDown = writesWhenOpen - writesBefore;
    assert.ok(
      writesDown <= WRITES_PER_FAILED_ATTEMPT * (threshold - 1),
      `${writesDown} writes: only the failures before the circuit opened`,
    );
    const gaps = proxy.healthChecks
      .slice(probesWhenOpen - 1)
      .map((at, index, all) => (index === 0 ? undefined : at - (all[index - 1] as number)))
      .slice(1) as number[];
    for (const gap of gaps)
      assert.ok(gap >= 1000 * (RETRY_DELAYS_S[0] as number), `health checks ${gap} ms apart: no hot loop`);

    proxy.setDown(false);
    const cameBack = Date.now();
    await eventually('every object handled', async () =>
      (await createResults(namespace)).size === names.length + 1 ? true : undefined,
    );
    const resumedMs = Date.now() - cameBack;
    t.diagnostic(`${writesDown} writes while down, all handled ${resumedMs} ms after the service's return`);
    const longestProbeDelayMs = 1000 * Math.max(...RETRY_DELAYS_S);
    assert.ok(
      resumedMs < longestProbeDelayMs + 2000,
      `all handled ${resumedMs} ms after the service's return`,
    );
  });
});
