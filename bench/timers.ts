/**
 * Timers and an index on many objects: a backlog of KopfExamples (10,000 by default) is created, then
 * each contender runs alone over its own backlog with a timer on every object (every `--interval`
 * seconds, returning a result that never changes) and a function index of the objects' names by
 * namespace, which the timer reads ([Causeway](operators/causeway-timers.ts),
 * [Kopf](operators/kopf_timers.py)). Kopf and Causeway take turns on one fresh control plane;
 * Causeway as the CLI bundled as deployed, twice: `causeway run` (the functions in the gateway's
 * process) and functions apart (`causeway gateway` calling `causeway serve` over HTTPS, signed with an
 * Ed25519 key as deployed), whose figures are the gateway's, with the function service's beside them.
 *
 * The operators count their timer calls per object in memory and write the counts to a file at most
 * once a second (from a call). Once every object's timer has fired twice, a steady window
 * (`--steady-seconds`) measures: timer calls per second against the N/interval expected, CPU of the
 * operator process (and of the apiserver, from its own `process_cpu_seconds_total`) per minute, RSS
 * sampled every 2 s (the median is the idle RSS), API writes (the apiserver's counters); the peak RSS
 * is the kernel's high-water mark at the end, the watch and list requests are counted over the run.
 *
 * `--index-memory causeway[,kopf]` runs those contenders again, without the index and with it in
 * turn, `--repeats` runs of each variant in all (the first run with the index counts as one): the
 * memory of the index over N objects is the difference of the medians of the runs' idle RSS.
 * `--also-without-index kopf[,causeway]` runs those once more without the index: the timers alone;
 * `--only-without-index apart[,…]` runs those without the index only.
 * Ratios are to Kopf's first run of the same variant (with or without the index).
 *
 *   npm run bench:timers -- [--objects 10000] [--interval 10] [--steady-seconds 60] [--only kopf,causeway,apart]
 *                           [--index-memory causeway] [--repeats 2] [--also-without-index kopf] [--only-without-index apart]
 *                           [--warmup-timeout 600]
 *                           [--node-flags="--max-semi-space-size=4"]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePorts } from '../deploy/control-plane/index.ts';
import type { KubeClient } from '../gateway/internals.ts';
import {
  createBacklog,
  KOPF_NAME,
  nodeFlagsOption,
  type OperatorProcess,
  operatorProcess,
  prepareContenders,
  processUsage,
  saveResults,
  say,
  sleep,
  startTogether,
  table,
  withCluster,
} from './common.ts';
import { countRequests, countWrites, difference, type WriteCounts } from './metrics.ts';

const { values } = parseArgs({
  options: {
    objects: { type: 'string', default: '10000' },
    interval: { type: 'string', default: '10' },
    'steady-seconds': { type: 'string', default: '60' },
    'warmup-timeout': { type: 'string', default: '600' },
    only: { type: 'string' },
    'index-memory': { type: 'string' },
    'also-without-index': { type: 'string' },
    'only-without-index': { type: 'string' },
    repeats: { type: 'string', default: '2' },
    'node-flags': { type: 'string' },
  },
});
const OBJECTS = Number(values.objects);
const INTERVAL = Number(values.interval);
const STEADY_SECONDS = Number(values['steady-seconds']);
const WARMUP_TIMEOUT_MS = Number(values['warmup-timeout']) * 1000;
const REPEATS = Number(values.repeats);
const INDEX_MEMORY = (values['index-memory'] ?? '').split(',').filter(Boolean);
const ALSO_WITHOUT_INDEX = (values['also-without-index'] ?? '').split(',').filter(Boolean);
const ONLY_WITHOUT_INDEX = (values['only-without-index'] ?? '').split(',').filter(Boolean);
const WRITTEN = ['kopfexamples', 'events'];
const RSS_SAMPLE_MS = 2000;
const STOP_TIMEOUT_MS = 60_000;

interface Contender {
  /** `kopf`, `causeway` or `apart`: what --only, --index-memory and --also-without-index name. */
  key: string;
  name: string;
  /** The operator's processes: the first is the one measured (the gateway, when apart). */
  start(namespace: string, env: Record<string, string>): Promise<OperatorProcess & { pids?: number[] }>;
}

/** What the operator writes to $BENCH_STATS (see the operators' comments). */
interface Stats {
  at: number;
  calls: number;
  objects: number;
  twice: number;
  min: number;
  max: number;
  indexMin: number | null;
  indexLast: number | null;
}

interface TimersResult {
  name: string;
  index: boolean;
  objects: number;
  interval: number;
  /** From the start to every object's timer called once, and twice (null: not within the warm-up timeout). */
  allOnceSeconds: number | null;
  allTwiceSeconds: number | null;
  /** Objects called at least twice when the steady window began. */
  twiceAtSteady: number;
  steady: {
    seconds: number;
    expectedCallsPerSecond: number;
    callsPerSecond: number;
    /** Of the operator process, per minute of the window. */
    cpuSecondsPerMinute: number;
    cpuMsPerCall: number;
    /** The apiserver's own CPU per minute of the window (process_cpu_seconds_total). */
    apiserverCpuSecondsPerMinute: number;
    /** Median and largest of the RSS samples (every 2 s). */
    idleRssMiB: number;
    maxRssMiB: number;
    rssSamplesMiB: number[];
    writes: WriteCounts;
    /** The operator's counts at the window's end. */
    stats: Stats;
    /** The function service's process, when apart (the figures above are then the gateway's). */
    functions?: { cpuSecondsPerMinute: number; idleRssMiB: number; peakRssMiB: number };
  };
  peakRssMiB: number;
  cpuSeconds: number;
  /** From the start to the steady window. */
  warmupWrites: WriteCounts;
  /** On the namespace's kopfexamples, over the whole run. */
  watches: number;
  lists: number;
}

async function main(): Promise<void> {
  const commands = await prepareContenders(nodeFlagsOption(values['node-flags']));
  await withCluster(async ({ controlPlane, client }) => {
    const metrics = () => controlPlane.metrics();
    const kubeconfig = controlPlane.kubeconfigPath;
    const [port] = await freePorts(1);
    const all: Contender[] = [
      {
        key: 'kopf',
        name: KOPF_NAME,
        start: async (namespace, env) =>
          operatorProcess(commands.kopf('kopf_timers.py', namespace), kubeconfig, env),
      },
      {
        key: 'causeway',
        name: 'causeway',
        start: async (namespace, env) =>
          operatorProcess(commands.causeway('causeway-timers.ts', namespace), kubeconfig, env),
      },
      {
        // As deployed: the gateway alone in its process, calling the function service over HTTPS, signed.
        key: 'apart',
        name: 'causeway, functions apart',
        start: (namespace, env) =>
          startTogether(
            [
              commands.causewayGateway(port as number, namespace),
              commands.causewayServe('causeway-timers.ts', port as number),
            ],
            { client, kubeconfig, namespace },
            env,
          ),
      },
    ];
    const only = values.only?.split(',');
    const contenders = all.filter((contender) => !only || only.includes(contender.key));
    const runs: TimersResult[] = [];
    let namespaces = 0;
    const run = async (contender: Contender, index: boolean) => {
      const namespace = `timers-${namespaces++}`;
      runs.push(await timersRun(contender, index, namespace, client, metrics));
      report(runs);
    };
    for (const contender of contenders) {
      if (ONLY_WITHOUT_INDEX.includes(contender.key)) {
        await run(contender, false);
        continue;
      }
      await run(contender, true);
      if (!INDEX_MEMORY.includes(contender.key)) {
        if (ALSO_WITHOUT_INDEX.includes(contender.key)) await run(contender, false);
        continue;
      }
      // Alternating, so that a drift of the machine weighs on both variants alike.
      for (let repeat = 0; repeat < REPEATS; repeat++) {
        await run(contender, false);
        if (repeat < REPEATS - 1) await run(contender, true);
      }
    }
    const indexMemory = contenders
      .filter((contender) => INDEX_MEMORY.includes(contender.key))
      .map((contender) => indexMemoryOf(contender.name, runs));
    reportIndexMemory(indexMemory);
    await saveResults('timers', {
      objects: OBJECTS,
      interval: INTERVAL,
      steadySeconds: STEADY_SECONDS,
      runs,
      indexMemory,
    });
  });
}

async function timersRun(
  contender: Contender,
  index: boolean,
  namespace: string,
  client: KubeClient,
  metrics: () => Promise<string>,
): Promise<TimersResult> {
  const label = `${contender.name} (${index ? 'with' : 'without'} the index)`;
  const dir = mkdtempSync(join(tmpdir(), 'causeway-timers-'));
  const statsFile = join(dir, 'stats.json');
  try {
    say(`${label}: creating ${OBJECTS} KopfExamples in ${namespace}`);
    await createBacklog(client, namespace, OBJECTS);
    const before = await metrics();
    const requestsBefore = requestCounts(before);
    const writesBefore = countWrites(before, WRITTEN);

    say(`${label}: started; waiting for every object's timer to fire twice`);
    const started = performance.now();
    const running = await contender.start(namespace, {
      BENCH_STATS: statsFile,
      BENCH_INTERVAL: String(INTERVAL),
      BENCH_INDEX: index ? '1' : '0',
    });
    const pid = running.pid as number;
    const functionsPid = running.pids?.[1];
    try {
      let allOnceSeconds: number | null = null;
      let allTwiceSeconds: number | null = null;
      let lastSaid = 0;
      for (;;) {
        if (running.gone) throw new Error(`${label} exited:\n${await running.exited}`);
        const stats = readStats(statsFile);
        const elapsed = performance.now() - started;
        if (stats && stats.objects >= OBJECTS) allOnceSeconds ??= elapsed / 1000;
        if (stats && stats.twice >= OBJECTS) {
          allTwiceSeconds = elapsed / 1000;
          break;
        }
        if (elapsed > WARMUP_TIMEOUT_MS) {
          say(`${label}: not every timer fired twice within ${WARMUP_TIMEOUT_MS / 1000} s; measuring anyway`);
          break;
        }
        if (elapsed - lastSaid > 15_000) {
          lastSaid = elapsed;
          say(
            `  ${(elapsed / 1000).toFixed(0)} s: ${stats?.objects ?? 0} objects called, ` +
              `${stats?.twice ?? 0} twice, ${stats?.calls ?? 0} calls, ` +
              `RSS ${processUsage(pid).rssMiB.toFixed(0)} MiB, CPU ${processUsage(pid).cpuSeconds.toFixed(0)} s`,
          );
        }
        await sleep(500);
      }

      say(`${label}: steady for ${STEADY_SECONDS} s`);
      const atStart = await metrics();
      const writesAtStart = countWrites(atStart, WRITTEN);
      const stats0 = readStats(statsFile) ?? noCalls();
      const usage0 = processUsage(pid);
      const functions0 = functionsPid === undefined ? undefined : processUsage(functionsPid);
      const t0 = performance.now();
      const samples: number[] = [];
      const functionsSamples: number[] = [];
      while (performance.now() - t0 < STEADY_SECONDS * 1000) {
        await sleep(RSS_SAMPLE_MS);
        if (running.gone) throw new Error(`${label} exited:\n${await running.exited}`);
        samples.push(processUsage(pid).rssMiB);
        if (functionsPid !== undefined) functionsSamples.push(processUsage(functionsPid).rssMiB);
      }
      const usage1 = processUsage(pid);
      const functions1 = functionsPid === undefined ? undefined : processUsage(functionsPid);
      const t1 = performance.now();
      const stats1 = readStats(statsFile) ?? noCalls();
      const atEnd = await metrics();
      const minutes = (t1 - t0) / 60_000;
      const cpu = usage1.cpuSeconds - usage0.cpuSeconds;
      const calls = stats1.calls - stats0.calls;
      const steady: TimersResult['steady'] = {
        seconds: (t1 - t0) / 1000,
        expectedCallsPerSecond: OBJECTS / INTERVAL,
        callsPerSecond: calls / ((stats1.at - stats0.at) / 1000),
        cpuSecondsPerMinute: cpu / minutes,
        cpuMsPerCall: calls > 0 ? (cpu * 1000) / calls : Number.NaN,
        apiserverCpuSecondsPerMinute: (processCpu(atEnd) - processCpu(atStart)) / minutes,
        idleRssMiB: median(samples),
        maxRssMiB: Math.max(...samples),
        rssSamplesMiB: samples.map((sample) => Math.round(sample * 10) / 10),
        writes: difference(countWrites(atEnd, WRITTEN), writesAtStart),
        stats: stats1,
        ...(functions0 && functions1
          ? {
              functions: {
                cpuSecondsPerMinute: (functions1.cpuSeconds - functions0.cpuSeconds) / minutes,
                idleRssMiB: median(functionsSamples),
                peakRssMiB: functions1.peakRssMiB,
              },
            }
          : {}),
      };
      const result = {
        name: contender.name,
        index,
        objects: OBJECTS,
        interval: INTERVAL,
        allOnceSeconds,
        allTwiceSeconds,
        twiceAtSteady: stats0.twice,
        steady,
        peakRssMiB: usage1.peakRssMiB,
        cpuSeconds: usage1.cpuSeconds,
        warmupWrites: difference(writesAtStart, writesBefore),
      };
      await stopWithin(running, STOP_TIMEOUT_MS, label);
      // Watch requests are counted when they end: the operator's ended with its process.
      await sleep(1000);
      const requestsAfter = requestCounts(await metrics());
      return {
        ...result,
        watches: requestsAfter.watches - requestsBefore.watches,
        lists: requestsAfter.lists - requestsBefore.lists,
      };
    } finally {
      if (!running.gone) await running.kill();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** SIGTERM; SIGKILL if it has not exited within `ms` (Kopf stops 10,000 timer tasks one by one). */
async function stopWithin(running: OperatorProcess, ms: number, label: string): Promise<void> {
  const stopping = running.stop();
  await Promise.race([stopping, sleep(ms)]);
  if (!running.gone) {
    say(`${label}: still running ${ms / 1000} s after SIGTERM; killed`);
    await running.kill();
  }
}

function readStats(file: string): Stats | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Stats;
  } catch {
    return undefined; // not written yet
  }
}

/** The counts before the first call (the operator writes none until then). */
function noCalls(): Stats {
  return { at: Date.now(), calls: 0, objects: 0, twice: 0, min: 0, max: 0, indexMin: null, indexLast: null };
}

function requestCounts(text: string): { watches: number; lists: number } {
  return {
    watches: countRequests(text, 'WATCH', 'kopfexamples', 'namespace'),
    lists: countRequests(text, 'LIST', 'kopfexamples', 'namespace'),
  };
}

/** The apiserver's `process_cpu_seconds_total`. */
function processCpu(text: string): number {
  const line = text.split('\n').find((candidate) => candidate.startsWith('process_cpu_seconds_total '));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

/** Of an even count, the mean of the two middle ones (common.ts's median takes the upper one). */
function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

interface IndexMemory {
  name: string;
  /** Each run's idle RSS (the median of its samples), in the order they ran. */
  withIndexMiB: number[];
  withoutIndexMiB: number[];
  /** The difference of the medians of the runs' idle RSS. */
  indexMiB: number;
  /** Half the spread of each variant's runs, added: how far the difference may be off. */
  errorMiB: number;
  /** The same for the peak RSS. */
  withIndexPeakMiB: number[];
  withoutIndexPeakMiB: number[];
  cpuSecondsPerMinuteWith: number[];
  cpuSecondsPerMinuteWithout: number[];
}

function indexMemoryOf(name: string, runs: TimersResult[]): IndexMemory {
  const of = (index: boolean) => runs.filter((run) => run.name === name && run.index === index);
  const idle = (index: boolean) => of(index).map((run) => run.steady.idleRssMiB);
  const spread = (values: number[]) => (Math.max(...values) - Math.min(...values)) / 2;
  return {
    name,
    withIndexMiB: idle(true),
    withoutIndexMiB: idle(false),
    indexMiB: median(idle(true)) - median(idle(false)),
    errorMiB: spread(idle(true)) + spread(idle(false)),
    withIndexPeakMiB: of(true).map((run) => run.peakRssMiB),
    withoutIndexPeakMiB: of(false).map((run) => run.peakRssMiB),
    cpuSecondsPerMinuteWith: of(true).map((run) => run.steady.cpuSecondsPerMinute),
    cpuSecondsPerMinuteWithout: of(false).map((run) => run.steady.cpuSecondsPerMinute),
  };
}

const mib = (value: number) => `${value.toFixed(0)} MiB`;
const seconds = (value: number | null) => (value === null ? 'not reached' : `${value.toFixed(1)} s`);
const ratio = (value: number, baseline: number | undefined) =>
  baseline && Number.isFinite(baseline) ? ` (${(value / baseline).toFixed(2)}x)` : '';
const describeWrites = (writes: WriteCounts) =>
  writes.total === 0
    ? '0'
    : `${writes.total} (${Object.entries(writes.byRequest)
        .map(([request, count]) => `${request} ${count}`)
        .join(', ')})`;

function report(runs: TimersResult[]): void {
  say(`\n${OBJECTS} objects, a timer on each every ${INTERVAL} s; steady window ${STEADY_SECONDS} s`);
  const rows = runs.map((run) => {
    const { steady } = run;
    const kopf = runs.find((candidate) => candidate.name === KOPF_NAME && candidate.index === run.index);
    const baseline = run.name === KOPF_NAME ? undefined : kopf?.steady;
    return [
      `${run.name}${run.index ? '' : ', no index'}`,
      `${seconds(run.allOnceSeconds)} / ${seconds(run.allTwiceSeconds)}`,
      `${steady.callsPerSecond.toFixed(0)}/s of ${steady.expectedCallsPerSecond.toFixed(0)}/s` +
        ratio(steady.callsPerSecond, baseline?.callsPerSecond),
      `${steady.stats.min}-${steady.stats.max}`,
      `${steady.cpuSecondsPerMinute.toFixed(1)} s${ratio(steady.cpuSecondsPerMinute, baseline?.cpuSecondsPerMinute)}`,
      `${steady.cpuMsPerCall.toFixed(3)} ms`,
      `${steady.apiserverCpuSecondsPerMinute.toFixed(1)} s`,
      mib(steady.idleRssMiB) + ratio(steady.idleRssMiB, baseline?.idleRssMiB),
      mib(run.peakRssMiB) + ratio(run.peakRssMiB, run.name === KOPF_NAME ? undefined : kopf?.peakRssMiB),
      describeWrites(run.warmupWrites),
      describeWrites(steady.writes),
      `${run.watches} / ${run.lists}`,
      `${steady.stats.indexMin ?? '-'} / ${steady.stats.indexLast ?? '-'}`,
      steady.functions
        ? `${steady.functions.cpuSecondsPerMinute.toFixed(1)} s, ${mib(steady.functions.idleRssMiB)}`
        : '-',
    ];
  });
  const header = [
    'operator',
    'all once / twice',
    'timer calls (steady)',
    'calls/object',
    'CPU/min',
    'CPU/call',
    'apiserver CPU/min',
    'idle RSS',
    'peak RSS',
    'writes to steady',
    'writes steady',
    'watch / list',
    'index seen min / last',
    'function service CPU/min, idle RSS',
  ];
  for (const line of table(header, rows)) say(line);
}

function reportIndexMemory(results: IndexMemory[]): void {
  if (results.length === 0) return;
  say(`\nthe index over ${OBJECTS} objects: idle RSS with it and without it, run by run`);
  const list = (values: number[]) => values.map((value) => value.toFixed(0)).join(', ');
  const rows = results.map((result) => [
    result.name,
    `${list(result.withIndexMiB)} MiB`,
    `${list(result.withoutIndexMiB)} MiB`,
    `${result.indexMiB.toFixed(0)} ± ${result.errorMiB.toFixed(0)} MiB`,
    `${list(result.withIndexPeakMiB)} / ${list(result.withoutIndexPeakMiB)} MiB`,
    `${list(result.cpuSecondsPerMinuteWith)} / ${list(result.cpuSecondsPerMinuteWithout)} s`,
  ]);
  const header = [
    'operator',
    'idle with',
    'idle without',
    'index',
    'peak with / without',
    'CPU/min with / without',
  ];
  for (const line of table(header, rows)) say(line);
}

main().catch((error: unknown) => {
  process.stderr.write(`benchmark failed: ${error instanceof Error ? error.stack : error}\n`);
  process.exit(1);
});
