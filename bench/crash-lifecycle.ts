/**
 * Kill -9 on everything: bench:crash extended to the whole lifecycle and to the other parts that can
 * die. For each target and contender, in a fresh namespace, KopfExamples are created at a steady pace;
 * once an object's create result is stored its `spec.field` is changed, and once the update result
 * names the new field one object in two is deleted (held by the operator's finalizer until its delete
 * handler has run). Meanwhile, from the operator's first handler call on, the target is killed with
 * SIGKILL and started again, K times, a seeded random 1–4 s apart (counted from the target being back:
 * a process spawned, the function service listening, the apiserver ready); then everything is left
 * to settle. Every handler call is recorded by the handler itself, one line appended to a log file
 * (bench/operators/*crash_lifecycle*, *crash-lifecycle*), and the objects are listed after every kill,
 * so each repeated call is traced to the kill it followed.
 *
 *   npm run bench:crash-lifecycle -- [--target operator|service|apiserver|all] [--objects 300]
 *     [--kills 10] [--handler-ms 100] [--seed <n>] [--only kopf|causeway]
 *
 * Targets: `operator`, the operator's process (`causeway run`; `kopf run`); `service`, Causeway's
 * function service (`causeway serve`, called by `causeway gateway` over HTTPS), restarted on the same
 * port; Kopf has no function service, so it has no row there; `apiserver`, kube-apiserver, restarted on
 * the same port and etcd data (the operator keeps running). `all` (the default) runs the three in turn
 * on one control plane.
 *
 * The checks: no result lost (every live object ends with its create result and the update result of
 * its field as last changed; a deleted object had both before it was deleted), no handler skipped
 * (create and update called for every object, delete for every deleted one), a repeat only of a call
 * in flight at a kill (a kill in between, and no listing since showed its result) and with the same
 * idempotency key, and no stale finalizer: every deleted object gone at the end. Exits with 1 when
 * Causeway fails one.
 */
import { randomInt } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePorts } from '../deploy/control-plane/index.ts';
import type { KubeClient } from '../gateway/internals.ts';
import type { KubernetesObject } from '../protocol/index.ts';
import {
  type BenchCluster,
  type Call,
  CallLog,
  type Contenders,
  createNamespace,
  forEachName,
  KOPF_NAME,
  KOPFEXAMPLES,
  mulberry32,
  type OperatorProcess,
  objectNames,
  operatorProcess,
  prepareContenders,
  saveResults,
  say,
  scratchDir,
  sleep,
  startTogether,
  table,
  until,
  withCluster,
} from './common.ts';

const TARGETS = ['operator', 'service', 'apiserver'] as const;
type Target = (typeof TARGETS)[number];

const { values } = parseArgs({
  options: {
    target: { type: 'string', default: 'all' },
    objects: { type: 'string', default: '300' },
    kills: { type: 'string', default: '10' },
    'handler-ms': { type: 'string', default: '100' },
    seed: { type: 'string' },
    only: { type: 'string' },
  },
});
if (values.target !== 'all' && !TARGETS.includes(values.target as Target))
  throw new Error(`--target: one of ${TARGETS.join(', ')} or all, not ${values.target}`);
const targets: readonly Target[] = values.target === 'all' ? TARGETS : [values.target as Target];
const OBJECTS = Number(values.objects);
const KILLS = Number(values.kills);
const HANDLER_MS = Number(values['handler-ms']);
const SEED = values.seed === undefined ? randomInt(2 ** 31) : Number(values.seed);

/** The time between two kills, uniform in this range (seconds), from the seeded generator. */
const GAP_S = [1, 4] as const;
/** The objects are all created in this share of the kills' expected span, so the last kills find updates and deletions. */
const CREATION_SHARE = 0.6;
/** After an operator's or a service's kill, before listing: writes the apiserver had already received land. */
const AFTER_KILL_MS = 250;
/** The workload's tick: objects created, changed and deleted as they become due. */
const TICK_MS = 300;
const REQUESTS_AT_ONCE = 16;
/**
 * After the last kill: until everything is settled, or nothing changes for this long: longer than a
 * watch's longest reconnect backoff (30 s, jittered up to 45 s), so that late is not taken for lost.
 */
const QUIET_MS = 50_000;
const SETTLE_LIMIT_MS = 240_000;
const SHOWN_NAMES = 20;
/** The longest wait for the operator's first handler call, after which the kills start. */
const FIRST_CALL_LIMIT_MS = 60_000;

const HANDLERS = ['create', 'update', 'delete'] as const;
type Handler = (typeof HANDLERS)[number];

/** What the operator runs as; `killTarget` kills the target part -9 and has it started again. */
interface Running {
  operator(): OperatorProcess;
  /** Starts the operator again after it exited by itself, as a Deployment would. */
  revive(): Promise<void>;
  killTarget(): Promise<void>;
  stop(): Promise<void>;
}

interface Contender {
  name: string;
  targets: readonly Target[];
  keyKind: string;
  start(
    target: Target,
    namespace: string,
    cluster: BenchCluster,
    env: Record<string, string>,
  ): Promise<Running>;
}

/** The objects as listed at `at`: which have which result, and which exist at all. */
interface Snapshot {
  at: number;
  created: Set<string>;
  /** The update result names the field as changed. */
  updated: Set<string>;
  present: Set<string>;
}

interface Kill {
  /** Date.now() at the kill. */
  at: number;
  /** Seconds from the kill until the target was back (the apiserver ready again; a process spawned). */
  downSeconds: number;
  /** Calls started since the kill before, whose result the listing after this kill did not show. */
  inFlight: number;
}

type Repeat = 'afterKill' | 'afterResult' | 'withoutKill';

interface Outcome {
  target: Target;
  name: string;
  namespace: string;
  seed: number;
  objects: number;
  /** Objects to delete once their update result is listed (one in two). */
  doomed: number;
  /** Objects whose deletion was asked: the doomed ones whose update result was listed. */
  deleted: number;
  kills: Kill[];
  /** Times the operator exited by itself and was started again, as a Deployment would. */
  exitedByItself: number;
  settleSeconds: number;
  settled: boolean;
  resultsLost: Record<'create' | 'update', string[]>;
  neverCalled: Record<Handler, string[]>;
  /** Deleted objects still there at the end, with their finalizers. */
  staleFinalizers: { name: string; finalizers: string[] }[];
  calls: Record<Handler, number>;
  repeats: Record<Repeat, string[]>;
  keyKind: string;
  sameKey: number;
  differentKey: string[];
}

const changedField = (name: string) => `changed-${name}`;

async function main(): Promise<void> {
  const commands = await prepareContenders();
  const all: Contender[] = [
    {
      name: KOPF_NAME,
      targets: ['operator', 'apiserver'],
      keyKind: 'uid:retry (Kopf has no idempotency key)',
      start: async (target, namespace, cluster, env) =>
        restartable(target, cluster, () =>
          operatorProcess(
            commands.kopf('kopf_crash_lifecycle.py', namespace),
            cluster.controlPlane.kubeconfigPath,
            env,
          ),
        ),
    },
    {
      name: 'causeway',
      targets: TARGETS,
      keyKind: 'idempotency key',
      start: async (target, namespace, cluster, env) =>
        target === 'service'
          ? servedApart(commands, namespace, cluster, env)
          : restartable(target, cluster, () =>
              operatorProcess(
                commands.causeway('causeway-crash-lifecycle.ts', namespace),
                cluster.controlPlane.kubeconfigPath,
                env,
              ),
            ),
    },
  ];
  const contenders = all.filter((contender) => !values.only || contender.name.startsWith(values.only));
  say(`seed ${SEED} (--seed ${SEED} repeats the draws of kill times)`);

  const outcomes = await withCluster(async (cluster) => {
    const done: Outcome[] = [];
    for (const target of targets) {
      for (const [index, contender] of contenders.entries()) {
        if (!contender.targets.includes(target)) {
          say(
            `\n${contender.name}: no ${target} to kill (Kopf runs its handlers in its own process): no row`,
          );
          continue;
        }
        done.push(await crashTest(target, contender, `crash-${target}-${index}`, cluster));
      }
    }
    return done;
  });
  const bugs = report(outcomes);
  await saveResults('crash-lifecycle', outcomes);
  if (bugs.length) {
    say(`\nCAUSEWAY BUGS:\n${bugs.map((bug) => `  - ${bug}`).join('\n')}`);
    process.exitCode = 1;
  }
}

/** One operator process, killed and started again (target operator) or kept while the apiserver is. */
function restartable(target: Target, cluster: BenchCluster, start: () => OperatorProcess): Running {
  let operator = start();
  return {
    operator: () => operator,
    async killTarget() {
      if (target === 'apiserver') {
        await cluster.controlPlane.restart('kube-apiserver', { kill: 'SIGKILL' });
        return;
      }
      await operator.kill();
      await sleep(AFTER_KILL_MS);
      operator = start();
    },
    stop: () => operator.stop(),
    async revive() {
      operator = start();
    },
  };
}

/** `causeway gateway` calling `causeway serve` over HTTPS; the service is the target. */
async function servedApart(
  commands: Contenders,
  namespace: string,
  cluster: BenchCluster,
  env: Record<string, string>,
): Promise<Running> {
  const [port] = (await freePorts(1)) as [number];
  const together = await startTogether(
    [commands.causewayGateway(port, namespace), commands.causewayServe('causeway-crash-lifecycle.ts', port)],
    { client: cluster.client, kubeconfig: cluster.controlPlane.kubeconfigPath, namespace },
    env,
  );
  return {
    operator: () => together,
    async killTarget() {
      await together.killService(0);
      await until(`the function service listening on ${port} again`, () => listening(port), {
        timeoutMs: 30_000,
      });
    },
    stop: () => together.stop(),
    async revive() {
      throw new Error(`the gateway exited:\n${await together.exited}`);
    },
  };
}

async function crashTest(
  target: Target,
  contender: Contender,
  namespace: string,
  cluster: BenchCluster,
): Promise<Outcome> {
  const { client } = cluster;
  const names = objectNames(OBJECTS);
  // One in two deleted: the even ones.
  const doomed = new Set(names.filter((_, index) => index % 2 === 0));
  say(
    `\n${target} killed, ${contender.name}: ${OBJECTS} objects in ${namespace}, ${doomed.size} of them to delete`,
  );
  await createNamespace(client, namespace);
  const logPath = join(scratchDir('crash-lifecycle'), 'calls.log');
  writeFileSync(logPath, '');
  const log = new CallLog(logPath);
  const random = mulberry32(SEED);
  const running = await contender.start(target, namespace, cluster, {
    BENCH_CALL_LOG: logPath,
    BENCH_HANDLER_MS: String(HANDLER_MS),
  });
  let exitedByItself = 0;
  const alive = async () => {
    if (!running.operator().gone) return;
    exitedByItself++;
    say(`  ${contender.name} exited by itself; started again`);
    await running.revive();
  };

  const workload = new Workload(client, namespace, names, doomed, (KILLS * (GAP_S[0] + GAP_S[1])) / 2);
  const driving = workload.drive();
  const kills: Kill[] = [];
  const snapshots: Snapshot[] = [];
  let era = 0;
  try {
    // The kills are of a running operator: they start once it has called its first handler.
    await until(`${contender.name}'s first handler call`, async () => (log.grown() ? true : undefined), {
      timeoutMs: FIRST_CALL_LIMIT_MS,
    });
    for (let k = 1; k <= KILLS; k++) {
      const gap = GAP_S[0] + random() * (GAP_S[1] - GAP_S[0]);
      const until = Date.now() + gap * 1000;
      while (Date.now() < until) {
        await sleep(50);
        await alive();
      }
      const calls = log.read(era++);
      const at = Date.now();
      await running.killTarget();
      const downSeconds = (Date.now() - at) / 1000;
      const snapshot = await snapshotOf(client, namespace);
      snapshots.push(snapshot);
      const inFlight = calls.filter((call) => !hasResult(call, snapshot)).length;
      kills.push({ at, downSeconds, inFlight });
      say(
        `  kill ${String(k).padStart(2)}/${KILLS} after ${gap.toFixed(1)} s, back in ${downSeconds.toFixed(1)} s: ` +
          `${calls.length} calls before it, ${inFlight} without their result after; ${workload.progress()}`,
      );
    }

    say(`  settling: until everything is done, or nothing changes for ${QUIET_MS / 1000} s`);
    const started = performance.now();
    let lastChange = performance.now();
    let settled = false;
    let previous = '';
    for (;;) {
      await sleep(TICK_MS);
      await alive();
      const calls = log.read(era);
      const snapshot = await snapshotOf(client, namespace);
      const state = `${snapshot.created.size}/${snapshot.updated.size}/${snapshot.present.size}/${workload.progress()}`;
      if (calls.length || state !== previous) lastChange = performance.now();
      previous = state;
      if (workload.done && allDone(snapshot, names, doomed)) {
        settled = true;
        break;
      }
      if (performance.now() - lastChange >= QUIET_MS) break;
      if (performance.now() - started > SETTLE_LIMIT_MS) {
        say(`  not settled in ${SETTLE_LIMIT_MS / 1000} s`);
        break;
      }
    }
    const settleSeconds = (performance.now() - started) / 1000;
    workload.stop();
    await driving;
    await running.stop();
    log.read(era);
    const list = await client.get<{ items: KubernetesObject[] }>(`${KOPFEXAMPLES}/${namespace}/kopfexamples`);
    say(`  settled: ${settled ? 'yes' : 'no'}, in ${settleSeconds.toFixed(1)} s; ${workload.progress()}`);
    return analyse({
      target,
      contender,
      namespace,
      names,
      doomed,
      kills,
      snapshots,
      deleted: workload.deleted,
      final: list.items,
      calls: log.calls,
      exitedByItself,
      settleSeconds,
      settled,
    });
  } finally {
    workload.stop();
    await running.stop();
  }
}

/**
 * The benchmark as the operator's users: creates the objects at a steady pace over `seconds`, changes
 * an object's field once its create result is stored, deletes a doomed object once its update result
 * names the new field. Requests the apiserver fails (it may be down) are made again on a later tick; a
 * creation or deletion that landed before its answer was lost shows as 409 or 404, both taken as done.
 */
class Workload {
  readonly #created = new Set<string>();
  readonly #changed = new Set<string>();
  readonly #deleted = new Set<string>();
  readonly #started = Date.now();
  #stopped = false;

  readonly #client: KubeClient;
  readonly #namespace: string;
  readonly #names: string[];
  readonly #doomed: Set<string>;
  readonly #seconds: number;

  constructor(client: KubeClient, namespace: string, names: string[], doomed: Set<string>, seconds: number) {
    this.#client = client;
    this.#namespace = namespace;
    this.#names = names;
    this.#doomed = doomed;
    this.#seconds = seconds;
  }

  /** The objects whose deletion the apiserver accepted. */
  get deleted(): ReadonlySet<string> {
    return this.#deleted;
  }

  get done(): boolean {
    return (
      this.#created.size === this.#names.length &&
      this.#changed.size === this.#names.length &&
      this.#deleted.size === this.#doomed.size
    );
  }

  progress(): string {
    return `${this.#created.size} created, ${this.#changed.size} changed, ${this.#deleted.size} deleted`;
  }

  stop(): void {
    this.#stopped = true;
  }

  async drive(): Promise<void> {
    const path = `${KOPFEXAMPLES}/${this.#namespace}/kopfexamples`;
    const rate = this.#names.length / (this.#seconds * CREATION_SHARE);
    while (!this.#stopped && !this.done) {
      await sleep(TICK_MS);
      const due = Math.min(this.#names.length, Math.ceil(((Date.now() - this.#started) / 1000) * rate));
      const toCreate = this.#names.slice(0, due).filter((name) => !this.#created.has(name));
      await this.#each(this.#created, toCreate, 409, (name) =>
        this.#client.request(path, {
          method: 'POST',
          body: {
            apiVersion: 'kopf.dev/v1',
            kind: 'KopfExample',
            metadata: { name },
            spec: { field: 'value' },
          },
        }),
      );
      let items: KubernetesObject[];
      try {
        items = (await this.#client.get<{ items: KubernetesObject[] }>(path)).items;
      } catch {
        continue;
      }
      const toChange = items
        .filter((item) => item.status?.create_fn !== undefined && !this.#changed.has(item.metadata.name))
        .map((item) => item.metadata.name);
      await this.#each(this.#changed, toChange, undefined, (name) =>
        this.#client.patch(`${path}/${name}`, 'merge', { spec: { field: changedField(name) } }),
      );
      const toDelete = items
        .filter((item) => this.#doomed.has(item.metadata.name) && !this.#deleted.has(item.metadata.name))
        .filter((item) => updateResult(item) === changedField(item.metadata.name))
        .map((item) => item.metadata.name);
      await this.#each(this.#deleted, toDelete, 404, (name) =>
        this.#client.request(`${path}/${name}`, { method: 'DELETE' }),
      );
    }
  }

  /** Makes the request for every name; a success (or the status that says it already landed) marks it done. */
  async #each(
    done: Set<string>,
    names: string[],
    landed: number | undefined,
    request: (name: string) => Promise<unknown>,
  ): Promise<void> {
    await forEachName(names, REQUESTS_AT_ONCE, async (name) => {
      try {
        await request(name);
        done.add(name);
      } catch (error) {
        if (landed !== undefined && (error as { status?: number }).status === landed) done.add(name);
      }
    });
  }
}

/** true once a connection to the port on loopback is accepted, undefined while refused. */
function listening(port: number): Promise<true | undefined> {
  return new Promise((settle) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      settle(true);
    });
    socket.once('error', () => settle(undefined));
  });
}

function updateResult(object: KubernetesObject): unknown {
  return (object.status?.update_fn as { field?: unknown } | undefined)?.field;
}

async function snapshotOf(client: KubeClient, namespace: string): Promise<Snapshot> {
  const list = await client.get<{ items: KubernetesObject[] }>(`${KOPFEXAMPLES}/${namespace}/kopfexamples`);
  const snapshot: Snapshot = { at: Date.now(), created: new Set(), updated: new Set(), present: new Set() };
  for (const object of list.items) {
    const { name } = object.metadata;
    snapshot.present.add(name);
    if (object.status?.create_fn !== undefined) snapshot.created.add(name);
    if (updateResult(object) === changedField(name)) snapshot.updated.add(name);
  }
  return snapshot;
}

/** A call's result as a listing shows it: create's and update's stored, delete's the object gone. */
function hasResult(call: Call, snapshot: Snapshot): boolean {
  const [handler, name] = call.name.split('/') as [Handler, string];
  if (handler === 'create') return snapshot.created.has(name);
  if (handler === 'update') return snapshot.updated.has(name);
  return !snapshot.present.has(name);
}

function allDone(snapshot: Snapshot, names: string[], doomed: Set<string>): boolean {
  return names.every((name) =>
    doomed.has(name) ? !snapshot.present.has(name) : snapshot.created.has(name) && snapshot.updated.has(name),
  );
}

function analyse(run: {
  target: Target;
  contender: Contender;
  namespace: string;
  names: string[];
  doomed: Set<string>;
  deleted: ReadonlySet<string>;
  kills: Kill[];
  snapshots: Snapshot[];
  final: KubernetesObject[];
  calls: Call[];
  exitedByItself: number;
  settleSeconds: number;
  settled: boolean;
}): Outcome {
  const { names, doomed, final, calls, snapshots, kills } = run;
  const byKey = Map.groupBy(calls, (call) => call.name);
  const called = (handler: Handler, name: string) => byKey.has(`${handler}/${name}`);
  const live = new Map(final.map((object) => [object.metadata.name, object]));
  const repeats: Record<Repeat, string[]> = { afterKill: [], afterResult: [], withoutKill: [] };
  const differentKey: string[] = [];
  let sameKey = 0;
  for (const [key, ofKey] of byKey) {
    for (const [index, call] of ofKey.entries()) {
      const before = ofKey[index - 1];
      if (!before) continue;
      if (call.key === before.key) sameKey++;
      else differentKey.push(key);
      const between = (at: number) => at > before.at && at < call.at;
      if (!kills.some((kill) => between(kill.at))) repeats.withoutKill.push(key);
      else if (snapshots.some((snapshot) => between(snapshot.at) && hasResult(before, snapshot)))
        repeats.afterResult.push(key);
      else repeats.afterKill.push(key);
    }
  }
  const kept = names.filter((name) => !run.deleted.has(name));
  return {
    target: run.target,
    name: run.contender.name,
    namespace: run.namespace,
    seed: SEED,
    objects: names.length,
    doomed: doomed.size,
    deleted: run.deleted.size,
    kills,
    exitedByItself: run.exitedByItself,
    settleSeconds: run.settleSeconds,
    settled: run.settled,
    // An object was deleted only once its update result was listed: only the others can lose one.
    resultsLost: {
      create: kept.filter((name) => live.get(name)?.status?.create_fn === undefined),
      update: kept.filter((name) => {
        const object = live.get(name);
        return !object || updateResult(object) !== changedField(name);
      }),
    },
    neverCalled: {
      create: names.filter((name) => !called('create', name)),
      update: names.filter((name) => !called('update', name)),
      delete: [...run.deleted].filter((name) => !called('delete', name)),
    },
    staleFinalizers: [...run.deleted]
      .filter((name) => live.has(name))
      .map((name) => ({ name, finalizers: live.get(name)?.metadata.finalizers ?? [] })),
    calls: Object.fromEntries(
      HANDLERS.map((handler) => [
        handler,
        calls.filter((call) => call.name.startsWith(`${handler}/`)).length,
      ]),
    ) as Record<Handler, number>,
    repeats,
    keyKind: run.contender.keyKind,
    sameKey,
    differentKey,
  };
}

/** Prints each target's figures side by side; returns Causeway's violations of the guarantee. */
function report(outcomes: Outcome[]): string[] {
  const count = (names: unknown[]) => String(names.length);
  const rows: [string, (outcome: Outcome) => string][] = [
    [
      'kills',
      (o) =>
        `${o.kills.length}, back in ${mean(o.kills.map((kill) => kill.downSeconds)).toFixed(1)} s on average`,
    ],
    [
      'calls without their result in the listing after a kill',
      (o) => String(o.kills.reduce((sum, kill) => sum + kill.inFlight, 0)),
    ],
    [
      'create results lost (of objects not deleted)',
      (o) => `${o.resultsLost.create.length} of ${o.objects - o.deleted}`,
    ],
    [
      'update results lost (of objects not deleted)',
      (o) => `${o.resultsLost.update.length} of ${o.objects - o.deleted}`,
    ],
    ['objects deleted (of those to delete)', (o) => `${o.deleted} of ${o.doomed}`],
    [
      'create / update / delete never called',
      (o) => HANDLERS.map((h) => count(o.neverCalled[h])).join(' / '),
    ],
    ['deleted objects left, stale finalizer', (o) => `${o.staleFinalizers.length} of ${o.deleted}`],
    ['create / update / delete calls', (o) => HANDLERS.map((h) => String(o.calls[h])).join(' / ')],
    ['repeats of a call in flight at a kill', (o) => count(o.repeats.afterKill)],
    ['repeats after the result was listed', (o) => count(o.repeats.afterResult)],
    ['repeats with no kill in between', (o) => count(o.repeats.withoutKill)],
    ['repeats with the same key / another', (o) => `${o.sameKey} / ${o.differentKey.length}`],
    ['exited by itself', (o) => String(o.exitedByItself)],
    ['settled', (o) => `${o.settled ? 'yes' : 'NO'}, ${o.settleSeconds.toFixed(1)} s after the last kill`],
  ];
  say(
    `\n${OBJECTS} objects created, changed and one in two deleted, ${KILLS} kill -9 of the target, handlers of ${HANDLER_MS} ms (seed ${SEED})`,
  );
  for (const target of targets) {
    const ofTarget = outcomes.filter((outcome) => outcome.target === target);
    say(`\ntarget: ${target}`);
    for (const line of table(
      ['', ...ofTarget.map((outcome) => outcome.name)],
      rows.map(([label, cell]) => [label, ...ofTarget.map(cell)]),
    ))
      say(line);
  }
  for (const outcome of outcomes.filter((o, i, all) => all.findIndex((x) => x.name === o.name) === i))
    say(`${outcome.name}: keys are ${outcome.keyKind}`);

  const bugs: string[] = [];
  const names = (list: string[]) =>
    `${[...new Set(list)].slice(0, SHOWN_NAMES).join(', ')}${new Set(list).size > SHOWN_NAMES ? ', …' : ''}`;
  for (const outcome of outcomes.filter((o) => o.name === 'causeway')) {
    const found = bugs.length;
    const check = (list: string[], what: string) => {
      if (list.length) bugs.push(`${outcome.target}: ${list.length} ${what}: ${names(list)}`);
    };
    check(outcome.resultsLost.create, 'create results lost');
    check(outcome.resultsLost.update, 'update results lost');
    for (const handler of HANDLERS) check(outcome.neverCalled[handler], `${handler} handlers never called`);
    check(
      outcome.staleFinalizers.map((left) => `${left.name} [${left.finalizers.join(' ')}]`),
      'deleted objects left with a finalizer',
    );
    check(outcome.repeats.afterResult, 'calls repeated after their result was listed');
    check(outcome.repeats.withoutKill, 'calls repeated with no kill in between');
    check(outcome.differentKey, 'repeated calls with a different idempotency key');
    if (bugs.length > found) bugs.push(`namespace ${outcome.namespace}, seed ${SEED}`);
  }
  return bugs;
}

function mean(numbers: number[]): number {
  return numbers.length ? numbers.reduce((sum, n) => sum + n, 0) / numbers.length : 0;
}

main().catch((error: unknown) => {
  process.stderr.write(`benchmark failed: ${error instanceof Error ? error.stack : error}\n`);
  process.exit(1);
});
