/**
 * Backlog benchmark: N KopfExamples are created while the operator is down; then it starts, and we
 * time until every object has status.create_fn. Kopf and Causeway run the same way, on the same
 * fresh control plane, in the same run, and figures are given as ratios against Kopf. A third row
 * shows the ceiling: the apiserver taking the same status writes sent straight to it.
 *
 *   npm run bench -- [--objects 1000] [--only kopf|causeway|apiserver]
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { bundleCli } from '../deploy/bundle.ts';
import { applyManifests, parseManifests } from '../gateway/kube/apply.ts';
import { KubeClient } from '../gateway/kube/client.ts';
import { Watcher } from '../gateway/kube/watcher.ts';
import { createLogger } from '../gateway/logging.ts';
import { cacheRoot, startControlPlane } from '../test/cluster/index.ts';
import { ensureKopf, KOPF_VERSION } from './kopf.ts';
import { countWrites, difference, type WriteCounts } from './metrics.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const say = (line: string) => process.stdout.write(`${line}\n`);
const quiet = createLogger({ level: 'error' });
const WRITTEN_RESOURCES = ['kopfexamples', 'events'];
const CLOCK_TICKS_PER_SECOND = 100;

/** Something that handles the backlog once started; `pid` when it is a process of its own. */
interface Running {
  pid?: number;
  exited: Promise<string>;
  stop(): Promise<void>;
}

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
  options: { objects: { type: 'string', default: '1000' }, only: { type: 'string' } },
});
const OBJECTS = Number(values.objects);

async function main(): Promise<void> {
  // The CLI as it is deployed: bundled (deploy/bundle.ts).
  const cli = await bundleCli(join(mkdtempSync(join(tmpdir(), 'causeway-bench-')), 'causeway.mjs'));
  const kopf = `${ensureKopf(cacheRoot(), say)}`;
  const all: Contender[] = [
    {
      name: `kopf ${KOPF_VERSION}`,
      start: (namespace, _client, kubeconfig) =>
        operatorProcess(
          kopf,
          [
            'run',
            '--standalone',
            '--quiet',
            '--namespace',
            namespace,
            join(ROOT, 'bench/operators/kopf_operator.py'),
          ],
          kubeconfig,
        ),
    },
    {
      name: 'causeway',
      start: (namespace, _client, kubeconfig) =>
        operatorProcess(
          process.execPath,
          [
            cli,
            'run',
            join(ROOT, 'bench/operators/causeway-operator.ts'),
            '--quiet',
            '--namespace',
            namespace,
          ],
          kubeconfig,
        ),
    },
    { name: 'apiserver alone', start: (namespace, client) => directWrites(namespace, client) },
  ];
  const contenders = all.filter((contender) => !values.only || contender.name.startsWith(values.only));

  const controlPlane = await startControlPlane({
    onProgress: (line) => say(`  ${line}`),
    controllerManager: false,
  });
  try {
    const config = new KubeConfig();
    config.loadFromFile(controlPlane.kubeconfigPath);
    const client = await KubeClient.fromConfig(config);
    const crd = parseManifests(readFileSync(join(ROOT, 'examples/01-minimal/crd.yaml'), 'utf8'));
    await applyManifests(client, crd, { fieldManager: 'bench' });

    const results: Result[] = [];
    for (const [index, contender] of contenders.entries()) {
      const namespace = `bench-${index}`;
      say(`${contender.name}: creating ${OBJECTS} KopfExamples in ${namespace} while it is down`);
      await createBacklog(client, namespace);
      results.push(await measure(contender, namespace, client, controlPlane));
    }
    report(results);
  } finally {
    await controlPlane.stop();
  }
}

function names(): string[] {
  return Array.from({ length: OBJECTS }, (_, index) => `kex-${String(index).padStart(5, '0')}`);
}

/** Runs `task` for every name, `concurrency` at a time. */
async function forEachName(concurrency: number, task: (name: string) => Promise<unknown>): Promise<void> {
  const pending = names();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let name = pending.pop(); name; name = pending.pop()) await task(name);
    }),
  );
}

async function createBacklog(client: KubeClient, namespace: string): Promise<void> {
  await client.request('/api/v1/namespaces', { method: 'POST', body: { metadata: { name: namespace } } });
  await forEachName(32, (name) =>
    client.request(`/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`, {
      method: 'POST',
      body: { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name }, spec: { field: 'value' } },
    }),
  );
}

function operatorProcess(file: string, args: string[], kubeconfig: string): Running {
  const child = spawn(file, args, {
    cwd: ROOT,
    env: { ...process.env, KUBECONFIG: kubeconfig },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<string>((settle) => child.once('exit', () => settle(stderr)));
  return {
    ...(child.pid ? { pid: child.pid } : {}),
    exited,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The ceiling: the same status writes, sent straight to the apiserver by this process. */
function directWrites(namespace: string, client: KubeClient): Running {
  const done = forEachName(64, (name) =>
    client.patch(`/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/${name}/status`, 'merge', {
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
  const listed = Promise.withResolvers<void>();
  const watcher = new Watcher({
    client,
    path: `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`,
    logger: quiet,
    onSynced: listed.resolve,
    onEvent: ({ object }) => {
      if (object.status?.create_fn !== undefined && !handledAt.has(object.metadata.uid)) {
        handledAt.set(object.metadata.uid, performance.now());
        if (handledAt.size === OBJECTS) allHandled.resolve();
      }
    },
  });
  watcher.start();
  await listed.promise;

  const before = countWrites(await controlPlane.metrics(), WRITTEN_RESOURCES);
  const started = performance.now();
  const running = contender.start(namespace, client, controlPlane.kubeconfigPath);
  const early = await Promise.race([allHandled.promise.then(() => undefined), running.exited]);
  if (early !== undefined)
    throw new Error(`${contender.name} exited before handling every object:\n${early}`);
  const finished = performance.now();
  const usage = running.pid ? processUsage(running.pid) : {};
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
    ...usage,
  };
}

/** Peak resident memory (the kernel's high-water mark) and CPU time of a running process. */
function processUsage(pid: number): { peakRssMiB: number; cpuSeconds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const peakRssMiB = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1]) / 1024;
  // Fields 14 and 15 of /proc/<pid>/stat, counted after the parenthesised command name.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuSeconds = (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  return { peakRssMiB, cpuSeconds };
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
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] as string).length)),
  );
  const line = (cells: string[]) =>
    cells.map((cell, column) => cell.padEnd(widths[column] as number)).join('  ');
  say(
    `\n${OBJECTS} objects created while the operator was down; time from its start until all have status.create_fn`,
  );
  say('(span rate: objects per second between the first and the last result, i.e. without start-up)');
  say(line(header));
  for (const row of rows) say(line(row));
  const out = join(ROOT, 'bench/results');
  mkdirSync(out, { recursive: true });
  const file = join(out, `backlog-${new Date().toISOString().replaceAll(':', '-')}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  say(`\nraw figures: ${file}`);
}

main().catch((error: unknown) => {
  process.stderr.write(`benchmark failed: ${error instanceof Error ? error.stack : error}\n`);
  process.exit(1);
});
