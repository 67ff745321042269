/**
 * Replies that cannot reach the process, and replies that cannot fill it (issue 21, points 1 and 4):
 * a hostile service's reply holding `__proto__`, one streaming 1 GB, and one over a count cap, each
 * refused with a clear log line, nothing of it applied, while an honest service's objects are handled.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { operator } from '../../../functions/index.ts';
import type { KubeClient } from '../../../gateway/kube/client.ts';
import { type KubernetesObject, PROTOCOL } from '../../../protocol/index.ts';
import { testNamespace } from '../../support/cluster.ts';
import { calledHandlers, type HostileCall, hostileService } from '../../support/hostile-service.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  kubeClient,
  memoryLogger,
  progressOf,
  runOperator,
  statusOnceThere,
  TEST_SECRET,
} from '../../support/operator.ts';

const CRD = new URL('../../../examples/01-minimal/crd.yaml', import.meta.url);
const MiB = 1024 * 1024;
const mebibytes = (bytes: number) => Math.round(bytes / MiB);
/** The deployed gateway's memory limit (deploy/base/gateway/deployment.yaml). */
const GATEWAY_MEMORY_LIMIT = 384 * MiB;

/** A service handling the KopfExamples labelled `side: <side>` with one create handler, `id`. */
function labelledService(name: string, side: string, id: string) {
  const op = operator({ name, secret: TEST_SECRET });
  op.on.create('kopfexamples', { id, labels: { side } }, async ({ name: object }) => ({ hello: object }));
  return op;
}

/** What a polluted Object.prototype would show on every object of the process. */
const pollution = () =>
  ['ignoreFailures', 'causewayPolluted'].filter((key) => Object.hasOwn(Object.prototype, key));

/** A 200 answer whose body streams `total` bytes of JSON-ish text, with no declared length. */
function streamOf(total: number, sent: { bytes: number }): Response {
  const encoder = new TextEncoder();
  const filler = new Uint8Array(MiB).fill(0x78);
  return new Response(
    new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent.bytes === 0) {
          const head = `{"protocol":"${PROTOCOL}","outcomes":{"create_fn":{"status":"success","result":"`;
          controller.enqueue(encoder.encode(head));
        }
        if (sent.bytes >= total) {
          controller.enqueue(encoder.encode('"}}}'));
          controller.close();
          return;
        }
        sent.bytes += filler.byteLength;
        controller.enqueue(filler);
      },
    }),
    { headers: { 'content-type': 'application/json' } },
  );
}

describe('hostile replies', () => {
  let client: KubeClient;
  before(async () => {
    await applyFile(CRD);
    client = await kubeClient();
  });
  const read = (path: string) => client.get<KubernetesObject>(path);
  /** The handler's progress message in the object's status, once a failed call left one. */
  const failureOf = (path: string, id: string) =>
    eventually(
      `the failure of ${id} on ${path}`,
      async () => progressOf(await read(path), 'hostile')?.[id]?.message,
    );

  /** A gateway serving a hostile service (the objects labelled `side: hostile`) and an honest one. */
  async function serve(
    t: { after(fn: () => unknown): void },
    namespace: string,
    answer: (call: HostileCall) => unknown,
  ) {
    const logger = memoryLogger();
    const hostile = hostileService(labelledService('hostile', 'hostile', 'create_fn'), { answer });
    const honest = labelledService('honest', 'honest', 'honest_fn');
    const running = await runOperator([hostile, honest], { namespaces: [namespace], logger });
    t.after(() => running.stop());
    const logged = (pattern: RegExp) =>
      eventually(`a log line like ${pattern}`, async () => logger.lines.find((line) => pattern.test(line)));
    return { logger, logged };
  }

  it('refuses a reply holding __proto__: nothing of it applied, no prototype reached, the honest service served', async (t) => {
    const namespace = await testNamespace(t);
    const { logged } = await serve(t, namespace, ({ request }) => {
      const [id] = calledHandlers(request);
      // JSON text: `__proto__` arrives as an own key, as JSON.parse makes it.
      return `{"protocol":"${PROTOCOL}","outcomes":{"${id}":{"status":"success","result":{"ok":true},"patch":{"spec":{"field":"changed"},"__proto__":{"ignoreFailures":true,"causewayPolluted":true}}}},"logs":[]}`;
    });
    const attacked = await createKopfExample(
      namespace,
      'attacked',
      { field: 'kept' },
      { labels: { side: 'hostile' } },
    );
    const bystander = await createKopfExample(namespace, 'bystander', {}, { labels: { side: 'honest' } });

    assert.deepEqual(await statusOnceThere(bystander, 'honest_fn'), { hello: 'bystander' });
    const line = await logged(
      /response\.outcomes\.create_fn\.patch\.__proto__: a reply may not hold the key \\"__proto__\\"/,
    );
    assert.match(line, /\/attacked\] handler failed temporarily .*handler=create_fn/);
    assert.match(await failureOf(attacked, 'create_fn'), /a reply may not hold the key "__proto__"/);
    const object = await read(attacked);
    assert.deepEqual(object.spec, { field: 'kept' }, 'no part of the patch was applied');
    assert.equal(object.status?.create_fn, undefined, 'nor its result');
    assert.deepEqual(pollution(), [], 'Object.prototype of the process running the gateway is untouched');
  });

  it('stops reading a reply that streams 1 GB: the call fails, memory stays low, the object unchanged, others handled', async (t) => {
    const namespace = await testNamespace(t);
    const sent = { bytes: 0 };
    const { logged } = await serve(t, namespace, () => streamOf(1024 * MiB, sent));
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 5);
    t.after(() => clearInterval(sampler));

    const flooded = await createKopfExample(
      namespace,
      'flooded',
      { field: 'kept' },
      { labels: { side: 'hostile' } },
    );
    await logged(
      /the reply of service \\"hostile\\" is over 16 MiB, the most the gateway reads \(calls\.maxReplyBytes\)/,
    );
    clearInterval(sampler);
    assert.match(await failureOf(flooded, 'create_fn'), /is over 16 MiB/);
    const object = await read(flooded);
    assert.deepEqual([object.spec, object.status?.create_fn], [{ field: 'kept' }, undefined]);
    t.diagnostic(
      `RSS ${mebibytes(baseline)} MiB, at most ${mebibytes(peak)} MiB; ${mebibytes(sent.bytes)} MiB sent`,
    );
    assert.ok(sent.bytes < 1024 * MiB, `the service was stopped after ${mebibytes(sent.bytes)} MiB of 1024`);
    assert.ok(
      peak - baseline < 96 * MiB && peak < GATEWAY_MEMORY_LIMIT,
      `RSS went from ${mebibytes(baseline)} to ${mebibytes(peak)} MiB`,
    );

    const after = await createKopfExample(namespace, 'after', {}, { labels: { side: 'honest' } });
    assert.deepEqual(await statusOnceThere(after, 'honest_fn'), { hello: 'after' });
  });

  it('fails a reply over a count cap (101 events): no event posted, nothing applied, the honest service served', async (t) => {
    const namespace = await testNamespace(t);
    const { logged } = await serve(t, namespace, ({ request }) => {
      const [id] = calledHandlers(request) as [string];
      const events = Array.from({ length: 101 }, (_, index) => ({
        type: 'Normal',
        reason: 'Flood',
        message: `event ${index}`,
      }));
      return { protocol: PROTOCOL, outcomes: { [id]: { status: 'success', result: { ok: true }, events } } };
    });
    const flooding = await createKopfExample(namespace, 'flooding', {}, { labels: { side: 'hostile' } });
    const bystander = await createKopfExample(namespace, 'bystander', {}, { labels: { side: 'honest' } });

    assert.deepEqual(await statusOnceThere(bystander, 'honest_fn'), { hello: 'bystander' });
    await logged(/response\.outcomes\.create_fn\.events: a response may hold 100 events at most/);
    assert.match(await failureOf(flooding, 'create_fn'), /may hold 100 events at most/);
    assert.equal((await read(flooding)).status?.create_fn, undefined);
    const { items } = await client.get<{ items: Array<{ reason?: string }> }>(
      `/api/v1/namespaces/${namespace}/events`,
    );
    assert.deepEqual(
      items.filter((event) => event.reason === 'Flood'),
      [],
    );
  });

  it('takes a Retry-After of 1e300 as a year: the object it shares is still handled by the other service, and its own retry has a date', async (t) => {
    const namespace = await testNamespace(t);
    const logger = memoryLogger();
    const busy = hostileService(labelledService('busy', 'shared', 'create_fn'), {
      answer: () =>
        Response.json(
          { protocol: PROTOCOL, error: 'busy' },
          { status: 429, headers: { 'retry-after': '1e300' } },
        ),
    });
    const honest = labelledService('honest', 'shared', 'honest_fn');
    const running = await runOperator([busy, honest], { namespaces: [namespace], logger });
    t.after(() => running.stop());

    const shared = await createKopfExample(namespace, 'shared', {}, { labels: { side: 'shared' } });
    assert.deepEqual(await statusOnceThere(shared, 'honest_fn'), { hello: 'shared' });
    const delayedUntil = await eventually("the busy handler's next attempt", async () => {
      return progressOf(await read(shared), 'busy')?.create_fn?.delayedUntil;
    });
    const days = (Date.parse(delayedUntil) - Date.now()) / (24 * 3600 * 1000);
    assert.ok(days > 364 && days <= 365, `the next attempt in a year, not ${days} days`);
  });
});
