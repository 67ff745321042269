/**
 * Backlog benchmark: N KopfExamples are created while the operator is down; then it starts, and we
 * time until every object has status.create_fn. Kopf and Causeway run the same way, on the same
 * fresh control plane, in the same run, and figures are given as ratios against Kopf. A third row
 * shows the ceiling: the apiserver taking the same status writes sent straight to it.
 *
 *   npm run bench -- [--objects 1000] [--only kopf|causeway|apiserver] [--node-flags="…"]
 */
import { parseArgs } from 'node:util';
import type { KubeClient } from '../gateway/kube/client.ts';
import {
  createBacklog,
  forEachName,
  KOPF_NAME,
  KOPFEXAMPLES,
  nodeFlagsOption,
  objectNames,
  operatorProcess,
  prepareContenders,
  processUsage,
  type Running,
  saveResults,
  say,
  table,
  watchKopfExamples,
  withCluster,
} from './common.ts';
import { countWrites, difference, type WriteCounts } from './metrics.ts';

const WRITTEN_RESOURCES = ['kopfexamples', 'events'];

interface Contender {
  name: string;
  start(namespace: string, client: KubeClient, kubeconfigPath: string): Running;
}

interface Result {
  name: string;
  objects: number;
  totalSeconds: number;
  spanSeconds: number;
  writes: WriteCounts;
  peakRssMiB?: number;
  cpuSeconds?: number;
}

const { values } = parseArgs({
  options: {
    objects: { type: 'string', default: '1000' },
    only: { type: 'string' },
    'node-flags': { type: 'string' },
  },
});
const OBJECTS = Number(values.objects);

async function main(): Promise<void> {
  const commands = await prepareContenders(nodeFlagsOption(values['node-flags']));
  const all: Contender[] = [
    {
      name: KOPF_NAME,
      start: (namespace, _client, kubeconfig) =>
        operatorProcess(commands.kopf('kopf_operator.py', namespace), kubeconfig),
    },
    {
      name: 'causeway',
      start: (namespace, _client, kubeconfig) =>
        operatorProcess(commands.causeway('causeway-operator.ts', namespace), kubeconfig),
    },
    { name: 'apiserver alone', start: (namespace, client) => directWrites(namespace, client) },
  ];
  const contenders = all.filter((contender) => !values.only || contender.name.startsWith(values.only));

  await withCluster(async ({ controlPlane, client }) => {
    const results: Result[] = [];
    for (const [index, contender] of contenders.entries()) {
      const namespace = `bench-${index}`;
      say(`${contender.name}: creating ${OBJECTS} KopfExamples in ${namespace} while it is down`);
      await createBacklog(client, namespace, OBJECTS);
      results.push(await measure(contender, namespace, client, controlPlane));
    }
    report(results);
    await saveResults('backlog', results);
  });
}

/** The ceiling: the same status writes, sent straight to the apiserver by this process. */
function directWrites(namespace: string, client: KubeClient): Running {
  const done = forEachName(objectNames(OBJECTS), 64, (name) =>
    client.patch(`${KOPFEXAMPLES}/${namespace}/kopfexamples/${name}/status`, 'merge', {
      status: { create_fn: { message: `hello ${name}` } },
    }),
  );
  return { exited: done.then(() => new Promise<string>(() => {})), stop: () => done };
}

async function measure(
  contender: Contender,
  namespace: string,
  client: KubeClient,
  controlPlane: { metrics(): Promise<string>; kubeconfigPath: string },
): Promise<Result> {
  const handledAt = new Map<string, number>();
  const allHandled = Promise.withResolvers<void>();
  const { watcher, listed } = watchKopfExamples(client, namespace, ({ object }) => {
    if (object.status?.create_fn !== undefined && !handledAt.has(object.metadata.uid)) {
      handledAt.set(object.metadata.uid, performance.now());
      if (handledAt.size === OBJECTS) allHandled.resolve();
    }
  });
  await listed;

  const before = countWrites(await controlPlane.metrics(), WRITTEN_RESOURCES);
  const started = performance.now();
  const running = contender.start(namespace, client, controlPlane.kubeconfigPath);
  const early = await Promise.race([allHandled.promise.then(() => undefined), running.exited]);
  if (early !== undefined)
    throw new Error(`${contender.name} exited before handling every object:\n${early}`);
  const finished = performance.now();
  const { peakRssMiB, cpuSeconds } = running.pid ? processUsage(running.pid) : {};
  await running.stop();
  await watcher.stop();
  const writes = difference(countWrites(await controlPlane.metrics(), WRITTEN_RESOURCES), before);
  const times = [...handledAt.values()];
  return {
    name: contender.name,
    objects: OBJECTS,
    totalSeconds: (finished - started) / 1000,
    spanSeconds: (Math.max(...times) - Math.min(...times)) / 1000,
    writes,
    ...(peakRssMiB === undefined ? {} : { peakRssMiB }),
    ...(cpuSeconds === undefined ? {} : { cpuSeconds }),
  };
}

function report(results: Result[]): void {
  const baseline = results.find((result) => result.name.startsWith('kopf'));
  const ratio = (value: number | undefined, base: number | undefined) =>
    value !== undefined && base ? ` (${(value / base).toFixed(2)}x)` : '';
  const rows = results.map((result) => {
    const base = baseline && baseline !== result ? baseline : undefined;
    const rate = result.objects / result.totalSeconds;
    const spanRate = result.objects / result.spanSeconds;
    return [
      result.name,
      `${result.totalSeconds.toFixed(2)} s`,
      `${rate.toFixed(0)}/s${ratio(rate, base && base.objects / base.totalSeconds)}`,
      `${spanRate.toFixed(0)}/s${ratio(spanRate, base && base.objects / base.spanSeconds)}`,
      (result.writes.total / result.objects).toFixed(2),
      result.peakRssMiB === undefined
        ? '-'
        : `${result.peakRssMiB.toFixed(0)} MiB${ratio(result.peakRssMiB, base?.peakRssMiB)}`,
      result.cpuSeconds === undefined
        ? '-'
        : `${result.cpuSeconds.toFixed(2)} s${ratio(result.cpuSeconds, base?.cpuSeconds)}`,
      Object.entries(result.writes.byRequest)
        .map(([request, count]) => `${request}: ${count}`)
        .join(', '),
    ];
  });
  const header = [
    'operator',
    'total',
    'objects/s',
    'span rate',
    'writes/object',
    'peak RSS',
    'CPU',
    'writes',
  ];
  say(
    `\n${OBJECTS} objects created while the operator was down; time from its start until all have status.create_fn`,
  );
  say('(span rate: objects per second between the first and the last result, i.e. without start-up)');
  for (const line of table(header, rows)) say(line);
}

main().catch((error: unknown) => {
  process.stderr.write(`benchmark failed: ${error instanceof Error ? error.stack : error}\n`);
  process.exit(1);
});
