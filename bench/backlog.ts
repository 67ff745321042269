/**
 * Backlog benchmark: N KopfExamples are created while the operator is down; then it starts, and we
 * time until every object has status.create_fn. Kopf, a Go controller of controller-runtime and
 * Causeway run the same way, on the same fresh control plane, in the same run, and figures are given
 * as ratios against controller-runtime's (the one to match), or Kopf's when it did not run. Causeway
 * runs twice: `causeway run` (functions in-process) and as deployed (`causeway gateway` calling
 * `causeway serve` over HTTPS). A last row shows the ceiling: the apiserver taking the same status
 * writes sent straight to it. Each operator's RSS is read again once it is idle: every object handled
 * and its processes quiet for a moment.
 *
 * `--compare <ref>` adds both shapes (`causeway run`, and the two apart) at another commit, bundled as
 * this one is: an A/B in one run, each shape beside its baseline, after it, or before it with
 * `--baseline-first` (alternate runs to cancel out what the order does). `--with-metrics` adds both shapes again with `--metrics` on (the metrics kept,
 * not scraped during the run), each after the same without, or before it with `--metrics-first`.
 *
 *   npm run bench -- [--objects 1000] [--only kopf|controller-runtime|causeway|apiserver] [--node-flags="…"]
 *     [--compare <ref> [--baseline-first]] [--with-metrics [--metrics-first]]
 */
import { parseArgs } from 'node:util';
import { freePorts } from '../deploy/control-plane/index.ts';
import type { KubeClient } from '../gateway/internals.ts';
import {
  type Contenders,
  createBacklog,
  followResults,
  forEachName,
  KOPF_NAME,
  KOPFEXAMPLES,
  nodeFlagsOption,
  objectNames,
  operatorProcess,
  pidsOf,
  prepareContenders,
  processUsage,
  type Running,
  saveResults,
  say,
  startTogether,
  table,
  untilQuiet,
  withArgs,
  withCluster,
} from './common.ts';
import {
  CONTROLLER_RUNTIME_NAME,
  controllerRuntime,
  controllerRuntimeVersions,
  ensureControllerRuntime,
} from './controller-runtime.ts';
import { countWrites, difference, type WriteCounts } from './metrics.ts';

const WRITTEN_RESOURCES = ['kopfexamples', 'events'];

interface Contender {
  name: string;
  /** `pids`: every process to measure, when there are several. */
  start(
    namespace: string,
    client: KubeClient,
    kubeconfigPath: string,
  ): (Running & { pids?: number[] }) | Promise<Running & { pids?: number[] }>;
}

/** One process's share: the gateway's, then the function service's, when they run apart. */
interface ProcessUsage {
  peakRssMiB: number;
  cpuSeconds: number;
  /** Its RSS once the operator was idle; absent if it never was within the wait. */
  idleRssMiB?: number;
}

interface Result {
  name: string;
  objects: number;
  totalSeconds: number;
  spanSeconds: number;
  writes: WriteCounts;
  processes: ProcessUsage[];
}

const { values } = parseArgs({
  options: {
    objects: { type: 'string', default: '1000' },
    only: { type: 'string' },
    'node-flags': { type: 'string' },
    compare: { type: 'string' },
    'baseline-first': { type: 'boolean' },
    'with-metrics': { type: 'boolean' },
    'metrics-first': { type: 'boolean' },
  },
});
const OBJECTS = Number(values.objects);

const chosen = (name: string) => !values.only || name.startsWith(values.only);

async function main(): Promise<void> {
  const commands = await prepareContenders(nodeFlagsOption(values['node-flags']), values.compare);
  // Built (or found in the cache) only when it runs: the first build takes minutes.
  const goController = chosen(CONTROLLER_RUNTIME_NAME) ? await ensureControllerRuntime(say) : undefined;
  const [port] = await freePorts(1);
  const { baseline } = commands;
  // Each shape beside the same at the baseline, after it or before it (`--baseline-first`).
  const beside = (own: Contender, atBaseline: (ref: NonNullable<typeof baseline>) => Contender) => {
    if (!baseline) return [own];
    return values['baseline-first'] ? [atBaseline(baseline), own] : [own, atBaseline(baseline)];
  };
  const metrics = ['--metrics', '127.0.0.1:0'];
  const withMetrics: Contender[] = values['with-metrics']
    ? [
        {
          name: 'causeway, metrics on',
          start: (namespace, _client, kubeconfig) =>
            operatorProcess(
              withArgs(commands.causeway('causeway-operator.ts', namespace), metrics),
              kubeconfig,
            ),
        },
        {
          name: 'causeway, functions apart, metrics on',
          start: (namespace, client, kubeconfig) =>
            startTogether(
              [
                withArgs(commands.causewayGateway(port as number, namespace), metrics),
                commands.causewayServe('causeway-operator.ts', port as number),
              ],
              { client, kubeconfig, namespace },
            ),
        },
      ]
    : [];
  const all: Contender[] = [
    {
      name: KOPF_NAME,
      start: (namespace, _client, kubeconfig) =>
        operatorProcess(commands.kopf('kopf_operator.py', namespace), kubeconfig),
    },
    ...(goController
      ? [
          {
            name: CONTROLLER_RUNTIME_NAME,
            start: (namespace: string, _client: KubeClient, kubeconfig: string) =>
              operatorProcess(controllerRuntime(goController, namespace), kubeconfig),
          },
        ]
      : []),
    ...beside(
      {
        name: 'causeway',
        start: (namespace, _client, kubeconfig) =>
          operatorProcess(commands.causeway('causeway-operator.ts', namespace), kubeconfig),
      },
      runAt,
    ),
    ...beside(
      {
        // As deployed: the gateway calls the function service over HTTPS, trusting its CA only.
        name: 'causeway, functions apart',
        start: (namespace, client, kubeconfig) =>
          startTogether(
            [
              commands.causewayGateway(port as number, namespace),
              commands.causewayServe('causeway-operator.ts', port as number),
            ],
            { client, kubeconfig, namespace },
          ),
      },
      (ref) => apartAt(ref, port as number),
    ),
    { name: 'apiserver alone', start: (namespace, client) => directWrites(namespace, client) },
  ];
  // Each with metrics on right after the same without (or before it, `--metrics-first`): alternate
  // runs cancel out what the order does.
  const [inProcess, apart] = withMetrics;
  const pair = (without: Contender, on: Contender) =>
    values['metrics-first'] ? [on, without] : [without, on];
  const ordered = all.flatMap((contender) =>
    contender.name === 'causeway' && inProcess
      ? pair(contender, inProcess)
      : contender.name === 'causeway, functions apart' && apart
        ? pair(contender, apart)
        : [contender],
  );
  const contenders = ordered.filter((contender) => chosen(contender.name));

  await withCluster(async ({ controlPlane, client }) => {
    const results: Result[] = [];
    for (const [index, contender] of contenders.entries()) {
      const namespace = `bench-${index}`;
      say(`${contender.name}: creating ${OBJECTS} KopfExamples in ${namespace} while it is down`);
      await createBacklog(client, namespace, OBJECTS);
      results.push(await measure(contender, namespace, client, controlPlane));
    }
    report(results);
    await saveResults('backlog', results, goController ? controllerRuntimeVersions(goController) : {});
  });
}

/** `causeway run`, at the commit `--compare` names. */
function runAt(baseline: NonNullable<Contenders['baseline']>): Contender {
  return {
    name: `causeway@${baseline.ref}`,
    start: (namespace, _client, kubeconfig) =>
      operatorProcess(baseline.causeway('causeway-operator.ts', namespace), kubeconfig),
  };
}

/** The gateway and the function service apart, at the commit `--compare` names. */
function apartAt(baseline: NonNullable<Contenders['baseline']>, port: number): Contender {
  return {
    name: `causeway@${baseline.ref}, functions apart`,
    start: (namespace, client, kubeconfig) =>
      startTogether(
        [
          baseline.causewayGateway(port as number, namespace),
          baseline.causewayServe('causeway-operator.ts', port),
        ],
        { client, kubeconfig, namespace },
      ),
  };
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
  const objects = followResults(client, namespace);
  await objects.listed;

  const before = countWrites(await controlPlane.metrics(), WRITTEN_RESOURCES);
  const started = performance.now();
  const running = await contender.start(namespace, client, controlPlane.kubeconfigPath);
  const allHandled = objects.until(() => objects.handledAt.size === OBJECTS);
  const early = await Promise.race([allHandled.then(() => undefined), running.exited]);
  if (early !== undefined)
    throw new Error(`${contender.name} exited before handling every object:\n${early}`);
  const finished = performance.now();
  const pids = pidsOf(running);
  const busy = pids.map((pid) => {
    const { peakRssMiB, cpuSeconds } = processUsage(pid);
    return { peakRssMiB, cpuSeconds };
  });
  const idle = await untilQuiet(pids);
  if (!idle) say(`${contender.name}: still busy a minute after the last result; no idle RSS`);
  const processes: ProcessUsage[] = busy.map((usage, index) =>
    idle ? { ...usage, idleRssMiB: processUsage(pids[index] as number).rssMiB } : usage,
  );
  await running.stop();
  await objects.stop();
  const writes = difference(countWrites(await controlPlane.metrics(), WRITTEN_RESOURCES), before);
  const times = [...objects.handledAt.values()];
  return {
    name: contender.name,
    objects: OBJECTS,
    totalSeconds: (finished - started) / 1000,
    spanSeconds: (Math.max(...times) - Math.min(...times)) / 1000,
    writes,
    processes,
  };
}

function report(results: Result[]): void {
  const baseline =
    results.find((result) => result.name === CONTROLLER_RUNTIME_NAME) ??
    results.find((result) => result.name.startsWith('kopf'));
  const ratio = (value: number | undefined, base: number | undefined) =>
    value !== undefined && base ? ` (${(value / base).toFixed(2)}x)` : '';
  const sum = (result: Result, of: keyof ProcessUsage) =>
    result.processes.length === 0 || result.processes.some((usage) => usage[of] === undefined)
      ? undefined
      : result.processes.reduce((total, usage) => total + (usage[of] as number), 0);
  /** The sum, and each process's part when there are several. */
  const usage = (result: Result, of: keyof ProcessUsage, unit: string, digits: number) => {
    const total = sum(result, of);
    if (total === undefined) return '-';
    const parts =
      result.processes.length > 1
        ? ` = ${result.processes.map((p) => (p[of] as number).toFixed(digits)).join(' + ')}`
        : '';
    const base = baseline && baseline !== result ? sum(baseline, of) : undefined;
    return `${total.toFixed(digits)} ${unit}${ratio(total, base)}${parts}`;
  };
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
      usage(result, 'peakRssMiB', 'MiB', 0),
      usage(result, 'idleRssMiB', 'MiB', 0),
      usage(result, 'cpuSeconds', 's', 2),
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
    'idle RSS',
    'CPU',
    'writes',
  ];
  say(
    `\n${OBJECTS} objects created while the operator was down; time from its start until all have status.create_fn`,
  );
  say(`(ratios against ${baseline?.name ?? 'none'}; span rate: objects per second between the first and`);
  say(' the last result, i.e. without start-up; CPU until the last result; idle RSS once every object');
  say(' was handled and the processes quiet; those of the functions apart: the gateway + the service)');
  for (const line of table(header, rows)) say(line);
}

main().catch((error: unknown) => {
  process.stderr.write(`benchmark failed: ${error instanceof Error ? error.stack : error}\n`);
  process.exit(1);
});
