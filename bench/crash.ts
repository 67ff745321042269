/**
 * Crash safety: a result is never lost and a due handler is never skipped. For each contender, N
 * KopfExamples are created while the operator is down; then the operator is started and killed with
 * SIGKILL at a random moment, K times over, and started once more to finish the backlog. Every handler
 * call is recorded by the handler itself, one line appended to a log file (bench/operators/*crash*),
 * and after every kill the objects are listed: so each repeated call can be traced to the kill it
 * followed, and to whether the object's result was already stored by then.
 *
 *   npm run bench:crash -- [--objects 1000] [--kills 20] [--seed <n>] [--only kopf|causeway]
 *
 * The moment of each kill is random, from a seeded generator (the seed is printed; --seed repeats
 * the draws): one kill in five is aimed at start-up, uniform in [0.3 s, the observed start-up]; the
 * others at processing, a uniform time after the run's first handler call (seen live in the log),
 * sized from the observed rate so that each run handles about its share of what is left. So the kills
 * spread over the whole backlog, and the last run still has objects to handle.
 *
 * Exits with 1 when Causeway loses a result, skips a handler, repeats a call whose result was stored
 * or that was not in flight at a kill, or repeats a call with a different idempotency key.
 */
import { randomInt } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { KubeClient } from '../gateway/internals.ts';
import type { KubernetesObject } from '../protocol/index.ts';
import {
  type BenchCluster,
  type Call,
  CallLog,
  type Command,
  createBacklog,
  KOPF_NAME,
  KOPFEXAMPLES,
  mulberry32,
  objectNames,
  operatorProcess,
  prepareContenders,
  saveResults,
  say,
  scratchDir,
  sleep,
  table,
  withCluster,
} from './common.ts';

const { values } = parseArgs({
  options: {
    objects: { type: 'string', default: '1000' },
    kills: { type: 'string', default: '20' },
    seed: { type: 'string' },
    only: { type: 'string' },
  },
});
const OBJECTS = Number(values.objects);
const KILLS = Number(values.kills);
const SEED = values.seed === undefined ? randomInt(2 ** 31) : Number(values.seed);

/** The share of kills aimed at start-up (before the first handler call), the rest at processing. */
const STARTUP_KILLS = 0.2;
/** The earliest kill, after the start. */
const EARLIEST_KILL_S = 0.3;
/** Until a run has called a handler: the time from the start to the first call. */
const STARTUP_GUESS_S = 0.6;
/** Until a run tells the rate: the longest time past the first call before a kill. */
const WINDOW_GUESS_S = 0.2;
/** A run that has called no handler this long after its start is killed anyway. */
const NO_CALL_LIMIT_S = 10;
const KILL_POLL_MS = 5;
/** After a kill, before listing: writes the apiserver had already received are let land. */
const AFTER_KILL_MS = 250;
/** The last run ends when every object has its result, or when nothing changes for this long. */
const QUIET_MS = 5000;
const LAST_RUN_LIMIT_MS = 180_000;
const POLL_MS = 500;
const SHOWN_NAMES = 20;

interface Contender {
  name: string;
  command(namespace: string): Command;
  /** The operator's own record that it handled the object (whether or not the result landed). */
  handledRecord(object: KubernetesObject): boolean;
  /** What the third field of a call's line is: an idempotency key, or Kopf's uid and retry. */
  keyKind: string;
}

/** The objects' state after a run: names with a result, names with the operator's handled-record. */
interface Snapshot {
  results: Set<string>;
  records: Set<string>;
}

interface Kill {
  run: number;
  /** What the kill was aimed at: start-up (before the first call) or processing. */
  aim: 'start-up' | 'processing';
  /** Seconds after the start. */
  killAt: number;
  /** Seconds from the start to this run's first handler call, if it made one. */
  firstCallAt?: number;
  calls: number;
  /** Objects with a result after the kill, in all. */
  results: number;
  /** This run's calls whose object had no result after the kill: the calls the kill interrupted. */
  inFlight: number;
  /** Whether the run made calls and left objects without a result: the kill hit processing. */
  midProcessing: boolean;
}

type Repeat = 'afterKill' | 'afterResult' | 'withinRun';

interface Outcome {
  name: string;
  namespace: string;
  seed: number;
  kills: Kill[];
  lastRunSeconds: number;
  lastRunFinished: boolean;
  resultsKept: number;
  resultsLost: number;
  /** Names without a result at the end. */
  withoutResult: string[];
  /** Names: the handled-record present, the result absent. */
  handledWithoutResult: string[];
  /** Names: neither a result nor a call. */
  neverCalled: string[];
  calls: number;
  calledMoreThanOnce: string[];
  /** Names per kind of repeat (a name can repeat more than once). */
  repeats: Record<Repeat, string[]>;
  keyKind: string;
  sameKey: number;
  /** Names whose repeated call carried another key than the call before it. */
  differentKey: string[];
}

async function main(): Promise<void> {
  const commands = await prepareContenders();
  const all: Contender[] = [
    {
      name: KOPF_NAME,
      command: (namespace) => commands.kopf('kopf_crash.py', namespace),
      handledRecord: (object) =>
        object.metadata.annotations?.['kopf.zalando.org/last-handled-configuration'] !== undefined,
      keyKind: 'uid:retry (Kopf has no idempotency key)',
    },
    {
      name: 'causeway',
      command: (namespace) => commands.causeway('causeway-crash.ts', namespace),
      handledRecord: (object) =>
        (object.status?.causeway as { essence?: unknown } | undefined)?.essence !== undefined ||
        object.metadata.annotations?.['causeway.dev/last-handled'] !== undefined,
      keyKind: 'idempotency key',
    },
  ];
  const contenders = all.filter((contender) => !values.only || contender.name.startsWith(values.only));
  say(`seed ${SEED} (--seed ${SEED} repeats the draws of kill times)`);

  const outcomes = await withCluster(async (cluster) => {
    const done: Outcome[] = [];
    for (const [index, contender] of contenders.entries()) {
      done.push(await crashTest(contender, `crash-${index}`, cluster));
    }
    return done;
  });
  const bugs = report(outcomes);
  await saveResults('crash', outcomes);
  if (bugs.length) {
    say(`\nCAUSEWAY BUGS:\n${bugs.map((bug) => `  - ${bug}`).join('\n')}`);
    process.exitCode = 1;
  }
}

async function crashTest(contender: Contender, namespace: string, cluster: BenchCluster): Promise<Outcome> {
  const { client, controlPlane } = cluster;
  say(`\n${contender.name}: creating ${OBJECTS} KopfExamples in ${namespace} while it is down`);
  await createBacklog(client, namespace, OBJECTS);
  const logPath = join(scratchDir('crash'), 'calls.log');
  writeFileSync(logPath, '');
  const log = new CallLog(logPath);
  const random = mulberry32(SEED);
  const start = () =>
    operatorProcess(contender.command(namespace), controlPlane.kubeconfigPath, { BENCH_CALL_LOG: logPath });

  const kills: Kill[] = [];
  const snapshots: Snapshot[] = [];
  let remaining = OBJECTS;
  for (let run = 1; run <= KILLS; run++) {
    const aim = killAim(kills, remaining, KILLS - run + 1, random);
    const started = Date.now();
    const operator = start();
    // Watches the log for the run's first call, to kill at the aimed moment.
    let firstCallSeen: number | undefined;
    for (;;) {
      await sleep(KILL_POLL_MS);
      if (operator.gone)
        throw new Error(`${contender.name} exited before kill ${run}:\n${await operator.exited}`);
      const now = Date.now();
      firstCallSeen ??= log.grown() ? now : undefined;
      if (aim.startupAt !== undefined && now - started >= aim.startupAt * 1000) break;
      if (aim.pastFirstCall !== undefined && firstCallSeen !== undefined) {
        if (now - firstCallSeen >= aim.pastFirstCall * 1000) break;
      }
      if (firstCallSeen === undefined && now - started >= NO_CALL_LIMIT_S * 1000) break;
    }
    const killed = Date.now();
    await operator.kill();
    await sleep(AFTER_KILL_MS);
    const calls = log.read(run);
    const snapshot = await snapshotOf(client, namespace, contender);
    snapshots.push(snapshot);
    remaining = OBJECTS - settled(snapshot);
    const first = calls[0];
    const kill: Kill = {
      run,
      aim: aim.startupAt === undefined ? 'processing' : 'start-up',
      killAt: (killed - started) / 1000,
      ...(first ? { firstCallAt: (first.at - started) / 1000 } : {}),
      calls: calls.length,
      results: snapshot.results.size,
      inFlight: calls.filter((call) => !snapshot.results.has(call.name)).length,
      midProcessing: calls.length > 0 && snapshot.results.size < OBJECTS,
    };
    kills.push(kill);
    say(
      `  kill ${String(run).padStart(2)}/${KILLS}, aimed at ${kill.aim.padEnd(10)}, at ${kill.killAt.toFixed(2)} s` +
        `${kill.firstCallAt === undefined ? ' (no call yet)' : ` (first call at ${kill.firstCallAt.toFixed(2)} s)`}` +
        `: ${kill.calls} calls, ${kill.inFlight} in flight; ${kill.results} results in all`,
    );
  }

  say(`  last run: until every object has its result, or nothing changes for ${QUIET_MS / 1000} s`);
  const lastRun = KILLS + 1;
  const started = performance.now();
  const operator = start();
  let final = await snapshotOf(client, namespace, contender);
  let lastChange = performance.now();
  let finished = false;
  try {
    for (;;) {
      await sleep(POLL_MS);
      if (operator.gone)
        throw new Error(`${contender.name} exited in its last run:\n${await operator.exited}`);
      const calls = log.read(lastRun);
      const snapshot = await snapshotOf(client, namespace, contender);
      if (calls.length || !sameSnapshot(snapshot, final)) lastChange = performance.now();
      final = snapshot;
      if (final.results.size === OBJECTS) {
        finished = true;
        break;
      }
      if (performance.now() - lastChange >= QUIET_MS) break;
      if (performance.now() - started > LAST_RUN_LIMIT_MS) {
        say(`  the last run did not settle in ${LAST_RUN_LIMIT_MS / 1000} s`);
        break;
      }
    }
  } finally {
    await operator.stop();
  }
  const lastRunSeconds = (performance.now() - started) / 1000;
  log.read(lastRun);
  final = await snapshotOf(client, namespace, contender);
  say(`  last run: ${lastRunSeconds.toFixed(1)} s, ${final.results.size} results in all`);
  return analyse(contender, namespace, kills, snapshots, final, log.calls, {
    lastRunSeconds,
    lastRunFinished: finished,
  });
}

/**
 * Where to aim the next kill. With probability STARTUP_KILLS, at start-up: uniform in
 * [EARLIEST_KILL_S, s] after the start, s the start-up observed so far (the mean time to the first
 * call). Otherwise past the run's first call, by a time uniform in [0, 2 t], t the time that the run's
 * share of the objects left takes at the rate observed so far (calls per second past first calls);
 * the share counts the last run as one, so the backlog lasts past the last kill.
 */
function killAim(
  kills: Kill[],
  remaining: number,
  killsLeft: number,
  random: () => number,
): { startupAt?: number; pastFirstCall?: number } {
  const called = kills.filter((kill) => kill.firstCallAt !== undefined);
  if (random() < STARTUP_KILLS) {
    const startup = called.length
      ? called.reduce((sum, kill) => sum + (kill.firstCallAt as number), 0) / called.length
      : STARTUP_GUESS_S;
    return { startupAt: EARLIEST_KILL_S + random() * Math.max(0, startup - EARLIEST_KILL_S) };
  }
  const busySeconds = called.reduce((sum, kill) => sum + kill.killAt - (kill.firstCallAt as number), 0);
  const calls = called.reduce((sum, kill) => sum + kill.calls, 0);
  if (busySeconds <= 0 || calls === 0) return { pastFirstCall: random() * WINDOW_GUESS_S };
  const share = remaining / ((1 - STARTUP_KILLS) * killsLeft + 1);
  return { pastFirstCall: random() * 2 * (share / (calls / busySeconds)) };
}

async function snapshotOf(client: KubeClient, namespace: string, contender: Contender): Promise<Snapshot> {
  const list = await client.get<{ items: KubernetesObject[] }>(`${KOPFEXAMPLES}/${namespace}/kopfexamples`);
  const snapshot: Snapshot = { results: new Set(), records: new Set() };
  for (const object of list.items) {
    if (object.status?.create_fn !== undefined) snapshot.results.add(object.metadata.name);
    if (contender.handledRecord(object)) snapshot.records.add(object.metadata.name);
  }
  return snapshot;
}

/** Objects the operator will not call again: with a result or with its handled-record. */
function settled(snapshot: Snapshot): number {
  return new Set([...snapshot.results, ...snapshot.records]).size;
}

function sameSnapshot(a: Snapshot, b: Snapshot): boolean {
  return a.results.size === b.results.size && a.records.size === b.records.size;
}

function analyse(
  contender: Contender,
  namespace: string,
  kills: Kill[],
  snapshots: Snapshot[],
  final: Snapshot,
  calls: Call[],
  lastRun: { lastRunSeconds: number; lastRunFinished: boolean },
): Outcome {
  const byName = Map.groupBy(calls, (call) => call.name);
  const repeats: Record<Repeat, string[]> = { afterKill: [], afterResult: [], withinRun: [] };
  const differentKey: string[] = [];
  let sameKey = 0;
  for (const [name, ofName] of byName) {
    for (const [index, call] of ofName.entries()) {
      const before = ofName[index - 1];
      if (!before) continue;
      if (call.key === before.key) sameKey++;
      else differentKey.push(name);
      if (call.run === before.run) repeats.withinRun.push(name);
      // Called again after a later kill: fine only if no listing since showed the result stored.
      else if (snapshots.slice(before.run - 1, call.run - 1).some((snapshot) => snapshot.results.has(name)))
        repeats.afterResult.push(name);
      else repeats.afterKill.push(name);
    }
  }
  const names = objectNames(OBJECTS);
  return {
    name: contender.name,
    namespace,
    seed: SEED,
    kills,
    ...lastRun,
    resultsKept: final.results.size,
    resultsLost: OBJECTS - final.results.size,
    withoutResult: names.filter((name) => !final.results.has(name)),
    handledWithoutResult: names.filter((name) => final.records.has(name) && !final.results.has(name)),
    neverCalled: names.filter((name) => !byName.has(name) && !final.results.has(name)),
    calls: calls.length,
    calledMoreThanOnce: [...byName].filter(([, ofName]) => ofName.length > 1).map(([name]) => name),
    repeats,
    keyKind: contender.keyKind,
    sameKey,
    differentKey,
  };
}

/** Prints the figures side by side; returns Causeway's violations of the guarantee. */
function report(outcomes: Outcome[]): string[] {
  const count = (names: string[]) => String(names.length);
  const rows: [string, (outcome: Outcome) => string][] = [
    ['results kept', (o) => `${o.resultsKept} of ${OBJECTS}`],
    ['results lost', (o) => String(o.resultsLost)],
    ['handled-record without result', (o) => count(o.handledWithoutResult)],
    ['due handler never called', (o) => count(o.neverCalled)],
    ['handler calls', (o) => String(o.calls)],
    ['objects called more than once', (o) => count(o.calledMoreThanOnce)],
    ['repeats of a call in flight at a kill', (o) => count(o.repeats.afterKill)],
    ['repeats after the result was stored', (o) => count(o.repeats.afterResult)],
    ['repeats with no kill in between', (o) => count(o.repeats.withinRun)],
    ['repeats with the same key / another', (o) => `${o.sameKey} / ${o.differentKey.length}`],
    [
      `kills mid-processing (of ${KILLS})`,
      (o) => String(o.kills.filter((kill) => kill.midProcessing).length),
    ],
    ['kills with calls in flight', (o) => String(o.kills.filter((kill) => kill.inFlight > 0).length)],
    ['calls in flight at kills', (o) => String(o.kills.reduce((sum, kill) => sum + kill.inFlight, 0))],
    [
      'last run',
      (o) =>
        `${o.lastRunSeconds.toFixed(1)} s${o.lastRunFinished ? '' : ` (ended by ${QUIET_MS / 1000} s of quiet)`}`,
    ],
  ];
  say(
    `\n${OBJECTS} objects created while the operator was down, ${KILLS} kill -9 while it handled them, then one run to the end (seed ${SEED})`,
  );
  for (const line of table(
    ['', ...outcomes.map((outcome) => outcome.name)],
    rows.map(([label, cell]) => [label, ...outcomes.map(cell)]),
  ))
    say(line);
  for (const outcome of outcomes) say(`${outcome.name}: keys are ${outcome.keyKind}`);

  const bugs: string[] = [];
  const causeway = outcomes.find((outcome) => outcome.name === 'causeway');
  if (!causeway) return bugs;
  const names = (list: string[]) =>
    `${[...new Set(list)].slice(0, SHOWN_NAMES).join(', ')}${new Set(list).size > SHOWN_NAMES ? ', …' : ''}`;
  if (causeway.resultsLost) {
    bugs.push(
      `${causeway.resultsLost} results lost: ${names(causeway.withoutResult)} ` +
        `(${causeway.handledWithoutResult.length} with the handled-record, ${causeway.neverCalled.length} never called)`,
    );
  }
  const check = (list: string[], what: string) => {
    if (list.length) bugs.push(`${list.length} ${what}: ${names(list)}`);
  };
  check(causeway.repeats.afterResult, 'calls repeated after the result was stored');
  check(causeway.repeats.withinRun, 'calls repeated with no kill in between');
  check(causeway.differentKey, 'repeated calls with a different idempotency key');
  if (bugs.length) bugs.push(`namespace ${causeway.namespace}, seed ${SEED}`);
  return bugs;
}

main().catch((error: unknown) => {
  process.stderr.write(`benchmark failed: ${error instanceof Error ? error.stack : error}\n`);
  process.exit(1);
});
