/**
 * Control-plane faults, both contenders side by side: Causeway (`causeway run`) and Kopf (`kopf run`
 * with its default settings), each in a namespace of its own, run at the same time against one real
 * control plane and put through the same faults at the same moment:
 *
 * - stall: the operator reaches the apiserver through a TCP proxy (test/support/stalling-proxy.ts;
 *   TLS passes through it end to end) whose open connections then go silent without closing; N
 *   objects are created right after, directly.
 * - cut: the same, the proxy's connections reset instead.
 * - gone: on a control plane without the watch cache, the proxy stalled, N objects created, etcd
 *   compacted, then the proxy's connections cut: each watch resumed from before the compaction is
 *   answered 410 Gone (by etcd itself), and the objects created meanwhile must be found by a new list.
 * - kube-apiserver, etcd: killed with SIGKILL while the operators work through a backlog, and started
 *   again on the same port and data; N more objects are created once it is back.
 * - throttled: each operator runs as a ServiceAccount that API Priority and Fairness gives a priority
 *   level of one share, answering 429 to what does not fit; a backlog waits for it.
 *
 * For each: when each object was first called (from the handler's own log, bench/operators/*crash*)
 * and when its result was stored, counted from the fault (for the kills from the restart, throttled
 * from the start); objects not handled within --limit seconds; objects called more than once; what the
 * operator printed.
 *
 *   npm run bench:faults -- [--faults stall,cut,kube-apiserver,etcd,gone,throttled] [--objects 10] [--backlog 600]
 *                           [--throttled-backlog 100] [--limit 150] [--only kopf|causeway] [--kopf-timeouts]
 *
 * --kopf-timeouts adds a third contender: Kopf with its watch timeouts set
 * (bench/operators/kopf_timeouts.py), labelled as such.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { writeKubeconfig } from '../deploy/control-plane/index.ts';
import type { KubeClient } from '../gateway/internals.ts';
import type { KubernetesObject } from '../protocol/index.ts';
import { type PrivateCluster, startPrivateCluster } from '../test/support/private-cluster.ts';
import { type StallingProxy, startStallingProxy } from '../test/support/stalling-proxy.ts';
import { flowControlCount, throttledServiceAccount } from '../test/support/throttled.ts';
import {
  type Command,
  createBacklog,
  createKopfExamples,
  KOPF_NAME,
  KOPFEXAMPLES,
  type OperatorProcess,
  objectNames,
  operatorProcess,
  prepareContenders,
  ROOT,
  saveResults,
  say,
  scratchDir,
  sleep,
  table,
  until,
  withArgs,
} from './common.ts';

const FAULTS = ['stall', 'cut', 'kube-apiserver', 'etcd', 'gone', 'throttled'] as const;
type Fault = (typeof FAULTS)[number];

const { values } = parseArgs({
  options: {
    faults: { type: 'string', default: FAULTS.join(',') },
    objects: { type: 'string', default: '10' },
    backlog: { type: 'string', default: '600' },
    'throttled-backlog': { type: 'string', default: '100' },
    limit: { type: 'string', default: '150' },
    only: { type: 'string' },
    'kopf-timeouts': { type: 'boolean', default: false },
  },
});
const OBJECTS = Number(values.objects);
const BACKLOG = Number(values.backlog);
const THROTTLED_BACKLOG = Number(values['throttled-backlog']);
const LIMIT_MS = Number(values.limit) * 1000;
const faults = values.faults.split(',').map((name) => {
  if (!(FAULTS as readonly string[]).includes(name))
    throw new Error(`no fault ${name}: ${FAULTS.join(', ')}`);
  return name as Fault;
});

/** Handled before the fault, so that the operator's connections are open and in use when it comes. */
const WARM_UP = 3;
/** The kill comes once every contender has called this share of its backlog. */
const KILL_AT_SHARE = 0.1;
const POLL_MS = 250;
/** A stop (SIGTERM) that takes longer is made a SIGKILL: a hung operator must not hang the bench. */
const STOP_MS = 15_000;

interface Contender {
  name: string;
  command(namespace: string): Command;
}

/** One contender's run through one fault. */
interface Outcome {
  fault: Fault;
  contender: string;
  namespace: string;
  /** Objects created for the measure (after the fault; for the kills, the backlog and those after). */
  objects: number;
  /** For the kills: the backlog's calls made before the kill, and how long the component was down. */
  callsBeforeKill?: number;
  downSeconds?: number;
  /** For `throttled`: the requests its priority level refused (429) and let through. */
  refused?: number;
  dispatched?: number;
  /** Seconds from the fault (the kills: from the component's return) to the first and last call. */
  firstCallSeconds?: number;
  lastCallSeconds?: number;
  /** Seconds from the fault (the kills: from the return) until every result was stored, if all were. */
  allStoredSeconds?: number;
  /** Results stored within the limit. */
  stored: number;
  /** Objects without a stored result when the limit passed. */
  missed: string[];
  /** How often each of those was called: 0, never; more, a result that was not stored. */
  missedCalls: Record<string, number>;
  /** Objects called more than once, with their number of calls. */
  repeated: Record<string, number>;
  /** What the operator printed (stderr) from its start to its stop. */
  printed: string[];
}

async function main(): Promise<void> {
  const commands = await prepareContenders();
  const all: Contender[] = [
    { name: 'causeway', command: (namespace) => commands.causeway('causeway-crash.ts', namespace) },
    { name: KOPF_NAME, command: (namespace) => commands.kopf('kopf_crash.py', namespace) },
    ...(values['kopf-timeouts']
      ? [
          {
            name: `${KOPF_NAME}, watch timeouts set`,
            command: (namespace: string) =>
              withArgs(commands.kopf('kopf_crash.py', namespace), [
                join(ROOT, 'bench/operators/kopf_timeouts.py'),
              ]),
          },
        ]
      : []),
  ];
  const contenders = all.filter((contender) => !values.only || contender.name.startsWith(values.only));
  const cluster = await startPrivateCluster({ onProgress: (line) => say(`  ${line}`) });
  const outcomes: Outcome[] = [];
  try {
    for (const fault of faults) {
      say(`\n${fault}: ${contenders.map((contender) => contender.name).join(' and ')} at the same time`);
      const results =
        fault === 'kube-apiserver' || fault === 'etcd'
          ? await killed(fault, contenders, cluster)
          : fault === 'throttled'
            ? await throttled(contenders, cluster)
            : fault === 'gone'
              ? await withoutWatchCache((own) => silentConnections(fault, contenders, own))
              : await silentConnections(fault, contenders, cluster);
      report(results);
      outcomes.push(...results);
    }
  } finally {
    await cluster.stop();
  }
  await saveResults('faults', {
    objects: OBJECTS,
    backlog: BACKLOG,
    throttledBacklog: THROTTLED_BACKLOG,
    limitSeconds: LIMIT_MS / 1000,
    outcomes,
  });
}

/** A control plane of its own without the watch cache, so that etcd itself answers a resumed watch. */
async function withoutWatchCache<T>(task: (cluster: PrivateCluster) => Promise<T>): Promise<T> {
  const cluster = await startPrivateCluster({ watchCache: false, onProgress: (line) => say(`  ${line}`) });
  try {
    return await task(cluster);
  } finally {
    await cluster.stop();
  }
}

/** A contender's operator running in a namespace of its own, its handler's calls logged to a file. */
interface Run {
  contender: Contender;
  namespace: string;
  operator: OperatorProcess;
  calls(): Map<string, number[]>;
  /** The lines it printed (stderr) so far. */
  printed(): string[];
}

function start(contender: Contender, namespace: string, kubeconfig: string): Run {
  const dir = scratchDir('faults');
  const log = join(dir, 'calls.log');
  const stderr = join(dir, 'stderr.log');
  writeFileSync(log, '');
  const command = contender.command(namespace);
  // All it prints, kept in a file: operatorProcess keeps only a tail. `exec`: the pid is the operator's.
  const operator = operatorProcess(
    {
      ...command,
      file: '/bin/sh',
      args: ['-c', 'exec "$0" "$@" 2>"$BENCH_STDERR"', command.file, ...command.args],
    },
    kubeconfig,
    { BENCH_CALL_LOG: log, BENCH_STDERR: stderr },
  );
  return {
    contender,
    namespace,
    operator,
    // `<epoch ms> <name> <key> <retry>` per call (bench/operators/*crash*): the times of each name's calls.
    calls: () => {
      const calls = new Map<string, number[]>();
      for (const line of readFileSync(log, 'utf8').split('\n').filter(Boolean)) {
        const [at, name] = line.split(' ') as [string, string];
        calls.set(name, [...(calls.get(name) ?? []), Number(at)]);
      }
      return calls;
    },
    printed: () =>
      readFileSync(stderr, 'utf8')
        .split('\n')
        .filter((line) => line.trim() !== ''),
  };
}

async function stop(run: Run): Promise<string[]> {
  const stopped = run.operator.stop();
  if ((await Promise.race([stopped.then(() => true), sleep(STOP_MS).then(() => false)])) === false) {
    await run.operator.kill();
  }
  return run.printed();
}

/** The names in `namespace` whose result is stored (status.create_fn, by either contender). */
async function storedResults(client: KubeClient, namespace: string): Promise<Set<string>> {
  const list = await client.get<{ items: KubernetesObject[] }>(`${KOPFEXAMPLES}/${namespace}/kopfexamples`);
  return new Set(
    list.items.filter((item) => item.status?.create_fn !== undefined).map((item) => item.metadata.name),
  );
}

/**
 * Polls every run's namespace until `expected` all have a result, or the limit passes from `since`
 * (epoch ms); the time each run's last result was first seen, if all were.
 */
async function untilStored(
  client: KubeClient,
  runs: Run[],
  expected: (run: Run) => string[],
  since: number,
): Promise<Map<Run, { stored: Set<string>; allStoredMs?: number }>> {
  const state = new Map(
    runs.map((run) => [run, { stored: new Set<string>() } as { stored: Set<string>; allStoredMs?: number }]),
  );
  while (Date.now() - since < LIMIT_MS) {
    const pending = runs.filter((run) => state.get(run)?.allStoredMs === undefined);
    if (!pending.length) break;
    for (const run of pending) {
      const stored = await storedResults(client, run.namespace);
      const names = expected(run).filter((name) => stored.has(name));
      const entry = { stored: new Set(names) } as { stored: Set<string>; allStoredMs?: number };
      if (names.length === expected(run).length) entry.allStoredMs = Date.now() - since;
      state.set(run, entry);
    }
    await sleep(POLL_MS);
  }
  return state;
}

function outcomeOf(
  fault: Fault,
  run: Run,
  expected: string[],
  since: number,
  result: { stored: Set<string>; allStoredMs?: number },
  printed: string[],
  extra: Pick<Outcome, 'callsBeforeKill' | 'downSeconds' | 'refused' | 'dispatched'> = {},
): Outcome {
  const calls = run.calls();
  // Calls after the fault (the kills: after the return), of the objects measured.
  const times = expected
    .flatMap((name) => calls.get(name) ?? [])
    .filter((at) => at >= since)
    .map((at) => (at - since) / 1000);
  const missed = expected.filter((name) => !result.stored.has(name));
  const repeated = Object.fromEntries(
    [...calls].filter(([, ofName]) => ofName.length > 1).map(([name, ofName]) => [name, ofName.length]),
  );
  return {
    fault,
    contender: run.contender.name,
    namespace: run.namespace,
    objects: expected.length,
    ...extra,
    ...(times.length ? { firstCallSeconds: Math.min(...times), lastCallSeconds: Math.max(...times) } : {}),
    ...(result.allStoredMs === undefined ? {} : { allStoredSeconds: result.allStoredMs / 1000 }),
    stored: result.stored.size,
    missed,
    missedCalls: Object.fromEntries(missed.map((name) => [name, calls.get(name)?.length ?? 0])),
    repeated,
    printed,
  };
}

/**
 * Each contender through a proxy of its own; the proxies stalled (or cut) at once, then N objects
 * each; or, for `gone`, the objects created while stalled and etcd compacted, then the proxies cut.
 */
async function silentConnections(
  fault: 'stall' | 'cut' | 'gone',
  contenders: Contender[],
  cluster: PrivateCluster,
) {
  const { client } = cluster;
  const runs: Array<Run & { proxy: StallingProxy }> = [];
  try {
    for (const contender of contenders) {
      const namespace = await cluster.namespace();
      const proxy = await startStallingProxy(cluster.controlPlane);
      const kubeconfig = join(scratchDir('faults-kubeconfig'), 'kubeconfig');
      await writeKubeconfig(kubeconfig, proxy.target);
      runs.push({ ...start(contender, namespace, kubeconfig), proxy });
    }
    const warmUp = objectNames(WARM_UP, 'warm-up');
    for (const run of runs) {
      await createKopfExamples(client, run.namespace, warmUp, 16);
      await until(
        `${run.contender.name} to handle the warm-up objects`,
        async () => ((await storedResults(client, run.namespace)).size === WARM_UP ? true : undefined),
        { timeoutMs: 60_000 },
      );
    }
    const after = objectNames(OBJECTS, fault);
    let faultAt = Date.now();
    if (fault === 'gone') {
      // The watches parted from the apiserver while objects are created and etcd compacted; then the
      // connections are cut (well before Causeway would find the stall), and each watch, resumed
      // from before the compaction, is answered 410 Gone by etcd.
      for (const run of runs) run.proxy.stall();
      await Promise.all(runs.map((run) => createKopfExamples(client, run.namespace, after, 16)));
      const revision = await cluster.controlPlane.compact();
      faultAt = Date.now();
      for (const run of runs) run.proxy.cut();
      say(`  stalled, created ${OBJECTS} objects for each, compacted etcd at revision ${revision}, cut`);
    } else {
      for (const run of runs) run.proxy[fault]();
      say(`  ${fault === 'stall' ? 'stalled' : 'cut'} the connections; creating ${OBJECTS} objects for each`);
      await Promise.all(runs.map((run) => createKopfExamples(client, run.namespace, after, 16)));
    }
    const results = await untilStored(client, runs, () => after, faultAt);
    const outcomes: Outcome[] = [];
    for (const run of runs) {
      const printed = await stop(run);
      outcomes.push(outcomeOf(fault, run, after, faultAt, results.get(run) as never, printed));
    }
    return outcomes;
  } finally {
    for (const run of runs) {
      if (!run.operator.gone) await run.operator.kill();
      await run.proxy.close();
    }
  }
}

/**
 * Each contender with a backlog of its own, created before it starts; the component killed -9 once
 * every contender has called a tenth of its backlog, and started again; then N objects more each.
 */
async function killed(
  component: 'kube-apiserver' | 'etcd',
  contenders: Contender[],
  cluster: PrivateCluster,
) {
  const { client, controlPlane } = cluster;
  const runs: Run[] = [];
  try {
    const backlog = objectNames(BACKLOG);
    const namespaces: string[] = [];
    for (const [index] of contenders.entries()) {
      const namespace = `faults-${component}-${index}`;
      say(`  creating ${BACKLOG} objects in ${namespace}`);
      await createBacklog(client, namespace, BACKLOG);
      namespaces.push(namespace);
    }
    for (const [index, contender] of contenders.entries()) {
      runs.push(start(contender, namespaces[index] as string, controlPlane.kubeconfigPath));
    }
    const callsOf = (run: Run) => [...run.calls().values()].reduce((sum, times) => sum + times.length, 0);
    await until(
      `every contender to call ${Math.round(BACKLOG * KILL_AT_SHARE)} of its backlog`,
      async () => (runs.every((run) => callsOf(run) >= BACKLOG * KILL_AT_SHARE) ? true : undefined),
      { timeoutMs: 120_000, intervalMs: 5 },
    );
    const callsBeforeKill = new Map(runs.map((run) => [run, callsOf(run)]));
    const killedAt = Date.now();
    say(
      `  killing ${component} (-9): ${runs.map((run) => `${run.contender.name} ${callsBeforeKill.get(run)} calls`).join(', ')}`,
    );
    await controlPlane.restart(component, { kill: 'SIGKILL' });
    const backAt = Date.now();
    say(
      `  ${component} back after ${((backAt - killedAt) / 1000).toFixed(1)} s; creating ${OBJECTS} objects for each`,
    );
    const after = objectNames(OBJECTS, 'after');
    await Promise.all(runs.map((run) => createKopfExamples(client, run.namespace, after, 16)));
    const expected = [...backlog, ...after];
    const results = await untilStored(client, runs, () => expected, backAt);
    const outcomes: Outcome[] = [];
    for (const run of runs) {
      const printed = await stop(run);
      outcomes.push(
        outcomeOf(component, run, expected, backAt, results.get(run) as never, printed, {
          callsBeforeKill: callsBeforeKill.get(run) as number,
          downSeconds: (backAt - killedAt) / 1000,
        }),
      );
    }
    return outcomes;
  } finally {
    for (const run of runs) if (!run.operator.gone) await run.operator.kill();
  }
}

/**
 * Each contender as a ServiceAccount of its own that API Priority and Fairness puts in a priority level
 * of its own, of one share, that answers 429 to what does not fit (test/support/throttled.ts); started
 * on a backlog created before, all at once. Counted from the start.
 */
async function throttled(contenders: Contender[], cluster: PrivateCluster) {
  const { client } = cluster;
  const runs: Run[] = [];
  try {
    const backlog = objectNames(THROTTLED_BACKLOG);
    const prepared: Array<{ contender: Contender; namespace: string; kubeconfig: string; level: string }> =
      [];
    for (const [index, contender] of contenders.entries()) {
      const namespace = `faults-throttled-${index}`;
      await createBacklog(client, namespace, THROTTLED_BACKLOG);
      const level = `bench-throttled-${index}`;
      const config = await throttledServiceAccount(cluster, namespace, 'operator', level);
      const kubeconfig = join(scratchDir('faults-kubeconfig'), 'kubeconfig');
      writeFileSync(kubeconfig, config.exportConfig());
      prepared.push({ contender, namespace, kubeconfig, level });
    }
    say(`  ${THROTTLED_BACKLOG} objects for each; starting them, each throttled`);
    const startedAt = Date.now();
    for (const { contender, namespace, kubeconfig } of prepared)
      runs.push(start(contender, namespace, kubeconfig));
    const results = await untilStored(client, runs, () => backlog, startedAt);
    const outcomes: Outcome[] = [];
    for (const [index, run] of runs.entries()) {
      const printed = await stop(run);
      const { level } = prepared[index] as { level: string };
      outcomes.push(
        outcomeOf('throttled', run, backlog, startedAt, results.get(run) as never, printed, {
          refused: await flowControlCount(cluster, level, 'rejected'),
          dispatched: await flowControlCount(cluster, level, 'dispatched'),
        }),
      );
    }
    return outcomes;
  } finally {
    for (const run of runs) if (!run.operator.gone) await run.operator.kill();
  }
}

function report(outcomes: Outcome[]): void {
  const seconds = (value: number | undefined) => (value === undefined ? '-' : value.toFixed(1));
  say('');
  for (const line of table(
    [
      'contender',
      'first call s',
      'last call s',
      'all stored s',
      'stored',
      'missed',
      'repeated',
      'printed lines',
    ],
    outcomes.map((outcome) => [
      outcome.contender,
      seconds(outcome.firstCallSeconds),
      seconds(outcome.lastCallSeconds),
      outcome.allStoredSeconds === undefined
        ? `not in ${LIMIT_MS / 1000} s`
        : seconds(outcome.allStoredSeconds),
      `${outcome.stored}/${outcome.objects}`,
      String(outcome.missed.length),
      String(Object.keys(outcome.repeated).length),
      String(outcome.printed.length),
    ]),
  ))
    say(`  ${line}`);
  for (const outcome of outcomes) {
    if (outcome.refused !== undefined)
      say(
        `  ${outcome.contender}: ${outcome.refused} requests refused (429), ${outcome.dispatched} let through`,
      );
    for (const line of outcome.printed.slice(0, 5))
      say(`  ${outcome.contender} printed: ${line.slice(0, 300)}`);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`benchmark failed: ${error instanceof Error ? error.stack : error}\n`);
  process.exit(1);
});
