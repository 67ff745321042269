/**
 * Scale: a backlog of KopfExamples (10,000 by default) created while the operator is down, with
 * create, update and delete handlers (so a finalizer); then a restart over the handled objects; then
 * every object deleted. Then latency: objects created at a steady rate into a running operator.
 * Kopf and Causeway (the CLI bundled as published, started as a user starts it, `node causeway.mjs run`
 * with no Node flags unless given --node-flags) take turns on one fresh control plane, Causeway twice:
 * functions in-process (`causeway run`), and as deployed (`causeway gateway` calling `causeway serve`
 * over HTTPS); the latency runs also measure the apiserver alone (this process writing the status
 * itself).
 *
 * Reported per contender: handler calls per object (exactly 1.00 is the promise) and the objects called
 * more than once, API writes per object by request (the apiserver's own counters), watch requests
 * (each reconnect is one more), peak RSS while handling the backlog, RSS idle after the restart and CPU
 * (of the process and whatever it started; as deployed, of both processes together), and the create →
 * first status write latency percentiles per rate.
 *
 *   npm run bench:scale -- [--objects 10000 (0: latency only)] [--only causeway|kopf] [--rates 50,200]
 *                          [--no-delete] [--node-flags="--max-semi-space-size=8"]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePorts } from '../deploy/control-plane/index.ts';
import type { KubeClient } from '../gateway/internals.ts';
import {
  type Command,
  createBacklog,
  createNamespace,
  followResults,
  forEachName,
  KOPF_NAME,
  KOPFEXAMPLES,
  nodeFlagsOption,
  type OperatorProcess,
  objectNames,
  operatorProcess,
  percentiles,
  pidsOf,
  prepareContenders,
  processUsage,
  saveResults,
  say,
  sleep,
  startTogether,
  table,
  until,
  watchKopfExamples,
  withCluster,
} from './common.ts';
import { countRequests, countWrites, difference, type WriteCounts } from './metrics.ts';

const { values } = parseArgs({
  options: {
    objects: { type: 'string', default: '10000' },
    only: { type: 'string' },
    rates: { type: 'string', default: '50,200' },
    'latency-seconds': { type: 'string', default: '10' },
    'no-delete': { type: 'boolean', default: false },
    'node-flags': { type: 'string' },
  },
});
const OBJECTS = Number(values.objects);
const RATES = values.rates ? values.rates.split(',').filter(Boolean).map(Number) : [];
const LATENCY_SECONDS = Number(values['latency-seconds']);
const WRITTEN = ['kopfexamples', 'events'];
/** After the last result: how long the write counters must stay still to call the operator idle. */
const SETTLED_MS = 3000;
const PHASE_TIMEOUT_MS = 30 * 60_000;

interface Contender {
  name: string;
  /** What runs the operator: the first command is the one measured (RSS, CPU). */
  commands(namespace: string): Command[];
}

interface Calls {
  /** Calls of the handler, divided by the objects. */
  perObject: number;
  /** Objects it was called for more than once. */
  repeated: number;
}

interface ScaleResult {
  name: string;
  objects: number;
  /** From the start to the last create result. */
  backlogSeconds: number;
  create: Calls;
  backlogWrites: WriteCounts;
  peakRssMiB: number;
  cpuSeconds: number;
  /** RSS after a restart over the handled objects, once it has settled. */
  idleRssMiB: number;
  restartWrites: WriteCounts;
  deleteSeconds?: number;
  delete?: Calls;
  deleteWrites?: WriteCounts;
  /** Watch requests on the resource over the whole run (two starts: at least two). */
  watches: number;
}

interface LatencyResult {
  name: string;
  rate: number;
  objects: number;
  ms: { p50: number; p90: number; p99: number; max: number };
}

async function main(): Promise<void> {
  const nodeFlags = nodeFlagsOption(values['node-flags']);
  const commands = await prepareContenders(nodeFlags);
  // How Causeway was started, in the raw figures: its memory settings come from these when set.
  const started = {
    nodeFlags,
    CAUSEWAY_MEMORY_SETTINGS: process.env.CAUSEWAY_MEMORY_SETTINGS ?? null,
    MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? null,
  };
  const [port] = await freePorts(1);
  const all: Contender[] = [
    { name: KOPF_NAME, commands: (namespace) => [commands.kopf('kopf_scale.py', namespace)] },
    { name: 'causeway', commands: (namespace) => [commands.causeway('causeway-scale.ts', namespace)] },
  ];
  const separate: Contender = {
    name: 'causeway, functions apart',
    commands: (namespace) => [
      commands.causewayGateway(port as number, namespace),
      commands.causewayServe('causeway-scale.ts', port as number),
    ],
  };
  const only = (contender: Contender) => !values.only || contender.name.startsWith(values.only);
  const contenders = [...all, separate].filter(only);

  await withCluster(async ({ controlPlane, client }) => {
    const metrics = () => controlPlane.metrics();
    const kubeconfig = controlPlane.kubeconfigPath;
    const scale: ScaleResult[] = [];
    for (const [index, contender] of contenders.entries()) {
      if (OBJECTS === 0) break; // latency only
      scale.push(await scaleRun(contender, `scale-${index}`, client, metrics, kubeconfig));
      reportScale(scale);
    }
    const latency: LatencyResult[] = [];
    for (const rate of RATES) {
      latency.push(await latencyRun(undefined, rate, `latency-${rate}-floor`, client, kubeconfig));
      for (const [index, contender] of contenders.entries()) {
        latency.push(await latencyRun(contender, rate, `latency-${rate}-${index}`, client, kubeconfig));
      }
      reportLatency(latency);
    }
    await saveResults('scale', { objects: OBJECTS, causeway: started, scale, latency });
  });
}

async function scaleRun(
  contender: Contender,
  namespace: string,
  client: KubeClient,
  metrics: () => Promise<string>,
  kubeconfig: string,
): Promise<ScaleResult> {
  const dir = mkdtempSync(join(tmpdir(), 'causeway-scale-'));
  const callLog = join(dir, 'calls');
  const env = { BENCH_CALL_LOG: callLog };
  try {
    say(`${contender.name}: creating ${OBJECTS} KopfExamples in ${namespace} while it is down`);
    await createBacklog(client, namespace, OBJECTS);
    const objects = followResults(client, namespace);
    await objects.listed;
    const watchesBefore = countRequests(await metrics(), 'WATCH', 'kopfexamples', 'namespace');

    say(`${contender.name}: started; handling the backlog`);
    let before = countWrites(await metrics(), WRITTEN);
    const started = performance.now();
    const first = await start(contender, { client, kubeconfig, namespace }, env);
    await objects.until(() => objects.handledAt.size === OBJECTS, [first]);
    const backlogSeconds = (performance.now() - started) / 1000;
    await settled(metrics);
    const backlogWrites = difference(countWrites(await metrics(), WRITTEN), before);
    const { peakRssMiB, cpuSeconds } = usageOf(first);
    await first.stop();

    say(`${contender.name}: restarted over the handled objects`);
    before = countWrites(await metrics(), WRITTEN);
    const second = await start(contender, { client, kubeconfig, namespace }, env);
    // Listing 10,000 objects and finding nothing to do: give it the time, then let the writes settle.
    await sleep(Math.max(5000, OBJECTS / 2));
    await settled(metrics);
    const idleRssMiB = usageOf(second).rssMiB;
    const restartWrites = difference(countWrites(await metrics(), WRITTEN), before);

    let deletion: Pick<ScaleResult, 'deleteSeconds' | 'delete' | 'deleteWrites'> = {};
    if (!values['no-delete']) {
      say(`${contender.name}: deleting every object`);
      before = countWrites(await metrics(), WRITTEN);
      const deleting = performance.now();
      await forEachName(objectNames(OBJECTS), 32, (name) =>
        client.request(`${KOPFEXAMPLES}/${namespace}/kopfexamples/${name}`, { method: 'DELETE' }),
      );
      await objects.until(() => objects.deleted() === OBJECTS, [second]);
      const deleteSeconds = (performance.now() - deleting) / 1000;
      await settled(metrics);
      const own = { 'DELETE kopfexamples': OBJECTS };
      const deleteWrites = difference(countWrites(await metrics(), WRITTEN), before, own);
      deletion = { deleteSeconds, delete: calls(callLog, 'delete'), deleteWrites };
    }
    await second.stop();
    await objects.stop();
    // Watch requests are counted when they end: the operators' ended with their processes.
    await sleep(1000);
    const watches = countRequests(await metrics(), 'WATCH', 'kopfexamples', 'namespace') - watchesBefore;
    return {
      name: contender.name,
      objects: OBJECTS,
      backlogSeconds,
      create: calls(callLog, 'create'),
      backlogWrites,
      peakRssMiB,
      cpuSeconds,
      idleRssMiB,
      restartWrites,
      ...deletion,
      watches,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What a contender's processes use together: its one, or its gateway's and function service's. */
function usageOf(running: OperatorProcess & { pids?: number[] }): ReturnType<typeof processUsage> {
  const each = pidsOf(running).map(processUsage);
  return {
    rssMiB: each.reduce((sum, usage) => sum + usage.rssMiB, 0),
    peakRssMiB: each.reduce((sum, usage) => sum + usage.peakRssMiB, 0),
    cpuSeconds: each.reduce((sum, usage) => sum + usage.cpuSeconds, 0),
  };
}

/** Starts a contender's one process, or its gateway and function service as deployed. */
function start(
  contender: Contender,
  cluster: { client: KubeClient; kubeconfig: string; namespace: string },
  env: Record<string, string>,
): OperatorProcess | Promise<OperatorProcess> {
  const [first, ...rest] = contender.commands(cluster.namespace);
  return rest.length > 0
    ? startTogether([first as Command, ...rest], cluster, env)
    : operatorProcess(first as Command, cluster.kubeconfig, env);
}

/** Creates objects at `rate` per second for LATENCY_SECONDS into a running operator (or, without one, this process answers). */
async function latencyRun(
  contender: Contender | undefined,
  rate: number,
  namespace: string,
  client: KubeClient,
  kubeconfig: string,
): Promise<LatencyResult> {
  const name = contender?.name ?? 'apiserver alone';
  const dir = mkdtempSync(join(tmpdir(), 'causeway-latency-'));
  await createNamespace(client, namespace);
  const path = `${KOPFEXAMPLES}/${namespace}/kopfexamples`;
  const objects = followResults(client, namespace);
  await objects.listed;
  const running = contender
    ? await start(contender, { client, kubeconfig, namespace }, { BENCH_CALL_LOG: join(dir, 'calls') })
    : floorController(client, namespace);
  try {
    const create = (object: string) =>
      client.request(path, {
        method: 'POST',
        body: { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name: object }, spec: {} },
      });
    // One object first, so that start-up is not counted.
    await create('warm-up');
    await objects.until(() => objects.handledAt.has('warm-up'));
    say(`${name}: creating ${rate} objects/s for ${LATENCY_SECONDS} s`);
    const count = rate * LATENCY_SECONDS;
    const sentAt = new Map<string, number>();
    const start = performance.now();
    const posts: Promise<unknown>[] = [];
    for (let index = 0; index < count; index++) {
      const due = start + (index * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const object = `lat-${index}`;
      sentAt.set(object, performance.now());
      posts.push(create(object));
    }
    await Promise.all(posts);
    await until(`${name}'s results`, async () => (objects.handledAt.size === count + 1 ? true : undefined), {
      timeoutMs: PHASE_TIMEOUT_MS,
      intervalMs: 100,
    });
    const latencies = [...sentAt].map(([object, sent]) => (objects.handledAt.get(object) as number) - sent);
    return { name, rate, objects: count, ms: percentiles(latencies) };
  } finally {
    await running.stop();
    await objects.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The floor: this process makes, as soon as its watch shows a new object, the two writes any operator
 * with a delete handler must make one after the other: the finalizer on, then the result.
 */
function floorController(client: KubeClient, namespace: string) {
  const { watcher } = watchKopfExamples(client, namespace, async ({ type, object }) => {
    if (type !== 'ADDED' || object.status?.create_fn !== undefined) return;
    const objectPath = `${KOPFEXAMPLES}/${namespace}/kopfexamples/${object.metadata.name}`;
    await client.patch(objectPath, 'merge', { metadata: { finalizers: ['bench.causeway.dev/floor'] } });
    await client.patch(`${objectPath}/status`, 'merge', {
      status: { create_fn: { message: `created ${object.metadata.name}` } },
    });
  });
  return { stop: () => watcher.stop() };
}

/** Waits until the write counters stay still for SETTLED_MS. */
async function settled(metrics: () => Promise<string>): Promise<void> {
  let last = countWrites(await metrics(), WRITTEN).total;
  for (let still = 0; still < SETTLED_MS; still += 500) {
    await sleep(500);
    const now = countWrites(await metrics(), WRITTEN).total;
    if (now !== last) still = -500;
    last = now;
  }
}

function calls(callLog: string, handler: string): Calls {
  let text = '';
  try {
    text = readFileSync(callLog, 'utf8');
  } catch {
    // no call at all
  }
  const perName = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [, kind, name] = line.split(' ');
    if (kind === handler && name) perName.set(name, (perName.get(name) ?? 0) + 1);
  }
  const total = [...perName.values()].reduce((sum, count) => sum + count, 0);
  return { perObject: total / OBJECTS, repeated: [...perName.values()].filter((count) => count > 1).length };
}

const perObject = (writes: WriteCounts | undefined) =>
  writes ? `${(writes.total / OBJECTS).toFixed(2)} (${describeWrites(writes)})` : '-';
const describeWrites = (writes: WriteCounts) =>
  Object.entries(writes.byRequest)
    .map(([request, count]) => `${request} ${(count / OBJECTS).toFixed(2)}`)
    .join(', ');

function reportScale(results: ScaleResult[]): void {
  say(`\n${OBJECTS} objects, create/update/delete handlers; per object: handler calls, API writes`);
  const rows = results.map((result) => [
    result.name,
    `${result.backlogSeconds.toFixed(1)} s (${(OBJECTS / result.backlogSeconds).toFixed(0)}/s)`,
    `${result.create.perObject.toFixed(2)} (${result.create.repeated} repeated)`,
    perObject(result.backlogWrites),
    `${result.peakRssMiB.toFixed(0)} MiB`,
    `${result.idleRssMiB.toFixed(0)} MiB`,
    `${result.cpuSeconds.toFixed(1)} s`,
    perObject(result.restartWrites),
    result.deleteSeconds === undefined ? '-' : `${result.deleteSeconds.toFixed(1)} s`,
    result.delete ? `${result.delete.perObject.toFixed(2)} (${result.delete.repeated} repeated)` : '-',
    perObject(result.deleteWrites),
    String(result.watches),
  ]);
  const header = [
    'operator',
    'backlog',
    'create calls',
    'backlog writes',
    'peak RSS',
    'idle RSS',
    'CPU',
    'restart writes',
    'deletion',
    'delete calls',
    'deletion writes',
    'watches',
  ];
  for (const line of table(header, rows)) say(line);
}

function reportLatency(results: LatencyResult[]): void {
  say('\ncreate → first status write, objects created at a steady rate');
  const header = ['operator', 'rate', 'p50', 'p90', 'p99', 'max'];
  const ms = (value: number) => `${value.toFixed(0)} ms`;
  const rows = results.map(({ name, rate, ms: { p50, p90, p99, max } }) => [
    name,
    `${rate}/s`,
    ms(p50),
    ms(p90),
    ms(p99),
    ms(max),
  ]);
  for (const line of table(header, rows)) say(line);
}

main().catch((error: unknown) => {
  process.stderr.write(`benchmark failed: ${error instanceof Error ? error.stack : error}\n`);
  process.exit(1);
});
