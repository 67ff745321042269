/**
 * Sharding: a backlog of KopfExamples (10,000 by default) created while no gateway runs, then handled
 * by 1, 2 and 3 `causeway run --sharding` replicas (one create handler, functions in-process, the CLI
 * bundled as deployed), on one fresh control plane. Beside them, the apiserver alone: this process
 * writing each object's status itself, 64 at a time, the floor that no number of replicas goes below.
 * Then three replicas again, one killed with SIGKILL a third into the backlog: how long until the
 * objects it owned are handled again (its Lease's 15 s, a look, the survivors' restart with their
 * new shares).
 *
 * The replicas start frozen (`causeway freeze`), so that they start handling together once all have
 * joined, at `causeway resume`: what is measured is the sharing, not which replica came up first.
 * Reported per run: objects/s from the resume (and from the first result), the peak RSS and the CPU
 * of each replica.
 *
 *   npm run bench:sharding -- [--objects 10000] [--replicas 1,2,3]
 */
import { parseArgs } from 'node:util';
import { freeze, type KubeClient, listMembers, Ring, resume } from '../gateway/internals.ts';
import {
  createBacklog,
  followResults,
  forEachName,
  KOPFEXAMPLES,
  type OperatorProcess,
  objectNames,
  operatorProcess,
  prepareContenders,
  processUsage,
  saveResults,
  say,
  sleep,
  table,
  withCluster,
} from './common.ts';

const { values } = parseArgs({
  options: {
    objects: { type: 'string', default: '10000' },
    replicas: { type: 'string', default: '1,2,3' },
  },
});
const OBJECTS = Number(values.objects);
const REPLICAS = values.replicas.split(',').map(Number);

interface Usage {
  replica: string;
  peakRssMiB: number;
  cpuSeconds: number;
}

interface ShardingResult {
  replicas: number;
  objects: number;
  /** From the resume to the last result. */
  seconds: number;
  objectsPerSecond: number;
  /** From the first result to the last: without the start and the first agreement on the shares. */
  handlingObjectsPerSecond: number;
  usage: Usage[];
}

interface FloorResult {
  objects: number;
  seconds: number;
  objectsPerSecond: number;
}

interface HandoverResult {
  replicas: number;
  objects: number;
  /** Objects handled when the replica was killed. */
  handledAtKill: number;
  /** From the kill to the first result again on an object the killed replica owned. */
  handoverSeconds: number;
  /** From the kill to the last result. */
  restSeconds: number;
}

type Replica = OperatorProcess & { id: string; killed?: boolean };

async function main(): Promise<void> {
  const commands = await prepareContenders();
  const start = (namespace: string, count: number, kubeconfig: string): Replica[] =>
    Array.from({ length: count }, (_, index) => {
      const id = `replica-${index}`;
      const command = commands.causeway('causeway-operator.ts', namespace, [
        '--sharding',
        '--peering-namespace',
        namespace,
      ]);
      return Object.assign(operatorProcess(command, kubeconfig, { POD_NAME: id }), { id });
    });

  await withCluster(async ({ controlPlane, client }) => {
    const kubeconfig = controlPlane.kubeconfigPath;
    const floor = await floorRun(client, 'sharding-floor');
    say(`the apiserver alone: ${floor.objectsPerSecond.toFixed(0)} status writes/s`);
    const runs: ShardingResult[] = [];
    for (const replicas of REPLICAS) {
      const namespace = `sharding-${replicas}`;
      say(`${replicas} replica(s): creating ${OBJECTS} KopfExamples in ${namespace}`);
      await createBacklog(client, namespace, OBJECTS);
      const objects = followResults(client, namespace);
      await objects.listed;
      const running = await startTogether(client, namespace, replicas, () =>
        start(namespace, replicas, kubeconfig),
      );
      const started = performance.now();
      try {
        await objects.until(() => objects.handledAt.size >= OBJECTS, running);
        const last = Math.max(...objects.handledAt.values());
        const first = Math.min(...objects.handledAt.values());
        const seconds = (last - started) / 1000;
        runs.push({
          replicas,
          objects: OBJECTS,
          seconds,
          objectsPerSecond: OBJECTS / seconds,
          handlingObjectsPerSecond: OBJECTS / ((last - first) / 1000),
          usage: running.map((replica) => ({ replica: replica.id, ...usageOf(replica) })),
        });
      } finally {
        await Promise.all(running.map((replica) => replica.stop()));
        await objects.stop();
      }
      report(floor, runs);
    }
    const handover = await handoverRun(client, kubeconfig, start);
    say(
      `3 replicas, one killed at ${handover.handledAtKill} of ${OBJECTS}: its objects handled again ` +
        `${handover.handoverSeconds.toFixed(1)} s after the kill; the rest done ${handover.restSeconds.toFixed(1)} s after it`,
    );
    await saveResults('sharding', { objects: OBJECTS, floor, runs, handover });
  });
}

/** The apiserver alone: one merge patch of each object's status, 64 at a time, from this process. */
async function floorRun(client: KubeClient, namespace: string): Promise<FloorResult> {
  await createBacklog(client, namespace, OBJECTS);
  const started = performance.now();
  await forEachName(objectNames(OBJECTS), 64, (name) =>
    client.patch(`${KOPFEXAMPLES}/${namespace}/kopfexamples/${name}/status`, 'merge', {
      status: { create_fn: { message: `hello ${name}` } },
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { objects: OBJECTS, seconds, objectsPerSecond: OBJECTS / seconds };
}

async function handoverRun(
  client: KubeClient,
  kubeconfig: string,
  start: (namespace: string, count: number, kubeconfig: string) => Replica[],
): Promise<HandoverResult> {
  const namespace = 'sharding-handover';
  say(`handover: creating ${OBJECTS} KopfExamples in ${namespace}`);
  await createBacklog(client, namespace, OBJECTS);
  const objects = followResults(client, namespace);
  await objects.listed;
  const running = await startTogether(client, namespace, 3, () => start(namespace, 3, kubeconfig));
  try {
    await objects.until(() => objects.handledAt.size >= Math.round(OBJECTS / 3), running);
    const victim = running[1] as Replica;
    victim.killed = true;
    await victim.kill();
    const killedAt = performance.now();
    const handledAtKill = objects.handledAt.size;
    // What it wrote just before the kill shows in the watch a moment later: not its orphans.
    await sleep(1000);
    // Who owned what before the kill: the ring every replica computed from the three ids.
    const ring = new Ring(running.map((replica) => replica.id));
    const orphans = [...objects.uids]
      .filter(([name, uid]) => ring.ownerOf(uid) === victim.id && !objects.handledAt.has(name))
      .map(([name]) => name);
    await objects.until(() => objects.handledAt.size >= OBJECTS, running);
    const again = orphans.map((name) => objects.handledAt.get(name) as number);
    return {
      replicas: 3,
      objects: OBJECTS,
      handledAtKill,
      handoverSeconds: (Math.min(...again) - killedAt) / 1000,
      restSeconds: (Math.max(...objects.handledAt.values()) - killedAt) / 1000,
    };
  } finally {
    await Promise.all(running.filter((replica) => !replica.killed).map((replica) => replica.stop()));
    await objects.stop();
  }
}

/**
 * Starts `count` replicas frozen, waits until each has joined and acknowledged the others, and
 * resumes them: they start their shares at once.
 */
async function startTogether(
  client: KubeClient,
  namespace: string,
  count: number,
  start: () => Replica[],
): Promise<Replica[]> {
  const prefix = 'causeway.dev';
  await freeze({
    client,
    namespace,
    prefix,
    message: 'bench: until every replica has joined',
    holder: 'bench',
    waitS: 0,
  });
  const running = start();
  for (;;) {
    const gateways = (await listMembers(client, namespace, prefix)).filter((member) => !member.freeze);
    const acknowledged = new Set(gateways.map((member) => member.acknowledged));
    if (gateways.length === count && acknowledged.size === 1 && !acknowledged.has('')) break;
    await sleep(100);
  }
  await resume({ client, namespace, prefix });
  return running;
}

function usageOf(replica: Replica): { peakRssMiB: number; cpuSeconds: number } {
  const { peakRssMiB, cpuSeconds } = processUsage(replica.pid as number);
  return { peakRssMiB, cpuSeconds };
}

function report(floor: FloorResult, runs: readonly ShardingResult[]): void {
  const lines = table(
    ['replicas', 'objects/s', 'from first result', 'of the floor', 'peak RSS MiB (each)', 'CPU s (each)'],
    runs.map((run) => [
      String(run.replicas),
      run.objectsPerSecond.toFixed(0),
      run.handlingObjectsPerSecond.toFixed(0),
      `${((run.handlingObjectsPerSecond / floor.objectsPerSecond) * 100).toFixed(0)}%`,
      run.usage.map((each) => each.peakRssMiB.toFixed(0)).join(' / '),
      run.usage.map((each) => each.cpuSeconds.toFixed(1)).join(' / '),
    ]),
  );
  for (const line of lines) say(line);
}

await main();
