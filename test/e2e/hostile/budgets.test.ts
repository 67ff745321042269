/**
 * Bulkheads (issue 39, point 7): a service's replies in flight are held to its own budget of bytes,
 * not only each one to 16 MiB. A hostile service answers 40 calls at once, each with 15 MiB streamed
 * slowly (the issue measured a gateway at 520 MiB so), while a well-behaved service on the same
 * resource has its objects handled meanwhile; `causeway gateway` runs as deployed, in a process of its
 * own, whose peak RSS is read from /proc.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { operator } from '../../../functions/index.ts';
import { serveFetch } from '../../../gateway/cli/commands/serve/serve.ts';
import { PROTOCOL } from '../../../protocol/index.ts';
import { testNamespace } from '../../support/cluster.ts';
import { hostileService } from '../../support/hostile-service.ts';
import { sample, samples } from '../../support/metrics.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  statusOnceThere,
  TEST_SECRET,
} from '../../support/operator.ts';
import { causeway, freePort } from '../../support/processes.ts';

const CRD = new URL('../../../examples/01-minimal/crd.yaml', import.meta.url);
const MiB = 1024 * 1024;
const REPLIES = 40;
const REPLY_BYTES = 15 * MiB;
/**
 * What the flood may add to the gateway's RSS at rest, at most. The hostile service's replies hold 64
 * MiB of its budget at most as they are read (four of 15 MiB); each is then copied whole, decoded and
 * parsed (some 45 MiB more while it is, one at a time); and V8 collects the pieces of what was read,
 * kept outside its heap, only once some 64 MiB of them have died. 64 + 64 + 45, and room for the
 * collector's timing (the garbage of two more replies): 256 MiB. Without the budget, the same flood
 * added 338 MiB (the issue measured a gateway at 520 MiB); with it, 171 to 195 MiB in five runs.
 */
const FLOOD_BOUND = 256 * MiB;
/** The deployed gateway's memory limit (deploy/helm, deploy/base/gateway/deployment.yaml). */
const GATEWAY_MEMORY_LIMIT = 384 * MiB;

/** A service handling the KopfExamples labelled `side: <side>` with one create handler, `id`. */
function labelledService(name: string, side: string, id: string) {
  const op = operator({ name, secret: TEST_SECRET });
  op.on.create('kopfexamples', { id, labels: { side } }, async ({ name: object }) => ({ hello: object }));
  return op;
}

/**
 * A 200 answer of some `total` bytes of JSON, its length declared, sent 256 KiB every 50 ms (5 MiB/s),
 * which the gateway refuses once read (it holds no outcomes): `replies` counts those begun and ended.
 */
function slowReply(total: number, replies: { begun: number; ended: number }): Response {
  const encoder = new TextEncoder();
  const head = encoder.encode(`{"protocol":"${PROTOCOL}","padding":"`);
  const tail = encoder.encode('"}');
  const piece = new Uint8Array(256 * 1024).fill(0x78);
  const pieces = Math.ceil(total / piece.byteLength);
  let sent = 0;
  replies.begun++;
  return new Response(
    new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent === 0) controller.enqueue(head);
        if (sent === pieces) {
          controller.enqueue(tail);
          controller.close();
          replies.ended++;
          return;
        }
        await new Promise((paced) => setTimeout(paced, 50));
        sent++;
        controller.enqueue(piece);
      },
    }),
    {
      headers: {
        'content-type': 'application/json',
        'content-length': String(head.byteLength + pieces * piece.byteLength + tail.byteLength),
      },
    },
  );
}

/** The peak resident memory of process `pid` so far (VmHWM), in bytes. */
function peakRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = /^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1];
  assert.ok(kib, status);
  return Number(kib) * 1024;
}

describe('budgets of function services', () => {
  it("holds a hostile service's replies in flight to its budget of bytes: the gateway's memory stays bounded, its neighbour's objects are handled meanwhile", async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const directory = await mkdtemp(join(tmpdir(), 'causeway-budgets-'));
    const secretFile = join(directory, 'secret');
    writeFileSync(secretFile, TEST_SECRET);
    const scopeFile = join(directory, 'scope.yaml');
    writeFileSync(scopeFile, 'resources: [kopfexamples.kopf.dev]\n');

    const replies = { begun: 0, ended: 0 };
    const hostile = await serveFetch(
      hostileService(labelledService('hostile', 'hostile', 'create_fn'), {
        answer: () => slowReply(REPLY_BYTES, replies),
      }),
      { port: 0, host: '127.0.0.1' },
    );
    t.after(() => hostile.close());
    const honest = await serveFetch(labelledService('honest', 'honest', 'honest_fn'), {
      port: 0,
      host: '127.0.0.1',
    });
    t.after(() => honest.close());
    const metricsPort = await freePort();
    const gateway = causeway(
      [
        'gateway',
        '--standalone',
        '--functions',
        `hostile=${hostile.url}`,
        '--functions',
        `honest=${honest.url}`,
        '--function-scope',
        `hostile=${scopeFile}`,
        '--function-scope',
        `honest=${scopeFile}`,
        '--namespace',
        namespace,
        '--secret-file',
        secretFile,
        '--metrics',
        `127.0.0.1:${metricsPort}`,
      ],
      process.env,
    );
    t.after(() => gateway.stop());
    await gateway.waitFor(/watching.*kopfexamples/);
    const pid = gateway.child.pid as number;
    const scrape = async () => samples(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text());
    const atRest = peakRss(pid);

    await Promise.all(
      Array.from({ length: REPLIES }, (_, index) =>
        createKopfExample(namespace, `flood-${index}`, {}, { labels: { side: 'hostile' } }),
      ),
    );
    await eventually('the hostile replies under way', async () => (replies.begun >= 8 ? true : undefined));
    const neighbours = await Promise.all(
      ['one', 'two', 'three'].map((name) =>
        createKopfExample(namespace, name, {}, { labels: { side: 'honest' } }),
      ),
    );
    for (const [index, path] of neighbours.entries()) {
      assert.deepEqual(await statusOnceThere(path, 'honest_fn'), { hello: ['one', 'two', 'three'][index] });
    }
    assert.ok(
      replies.ended < REPLIES,
      `the neighbour was handled while the hostile replies were still being sent (${replies.ended} of ${REPLIES} ended)`,
    );

    // Every hostile call answered once at least (refused, as it holds no outcomes): 600 MiB went through.
    await eventually(
      'every hostile reply read',
      async () => (replies.ended >= REPLIES ? true : undefined),
      180_000,
    );
    const metrics = await scrape();
    const budget = (service: string, name: string, labels = { service, budget: 'reply_bytes' }) =>
      sample(metrics, name, labels);
    const peak = peakRss(pid);
    t.diagnostic(
      `gateway RSS at rest ${Math.round(atRest / MiB)} MiB, at most ${Math.round(peak / MiB)} MiB; ` +
        `hostile reply_bytes waits ${budget('hostile', 'causeway_function_budget_waits_total')}`,
    );
    assert.ok(
      peak - atRest < FLOOD_BOUND && peak < GATEWAY_MEMORY_LIMIT,
      `the gateway's RSS went from ${Math.round(atRest / MiB)} MiB at rest to ${Math.round(peak / MiB)} MiB`,
    );
    assert.equal(budget('hostile', 'causeway_function_budget_limit'), 64 * MiB);
    assert.ok(budget('hostile', 'causeway_function_budget_waits_total') > 0, 'the hostile replies waited');
    assert.equal(
      budget('honest', 'causeway_function_budget_waits_total'),
      0,
      "the honest service's replies never waited",
    );
    assert.ok(budget('hostile', 'causeway_function_budget_used') <= 64 * MiB);
  });
});
