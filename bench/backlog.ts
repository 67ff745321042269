/**
 * Backlog benchmark: N KopfExamples are created while the operator is down; then it starts, and we
 * time until every object has status.create_fn. Kopf and Causeway run the same way, on the same
 * fresh control plane, in the same run; figures are reported as ratios against Kopf.
 *
 *   npm run bench -- [--objects 1000] [--only causeway|kopf]
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
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

interface Contender {
  name: string;
  command(namespace: string): { file: string; args: string[] };
}

interface Result {
  name: string;
  objects: number;
  totalSeconds: number;
  spanSeconds: number;
  writes: WriteCounts;
  peakRssMiB: number;
}

const { values } = parseArgs({
  options: { objects: { type: 'string', default: '1000' }, only: { type: 'string' } },
});
const OBJECTS = Number(values.objects);

async function main(): Promise<void> {
  const all: Contender[] = [
    {
      name: `kopf ${KOPF_VERSION}`,
      command: (namespace) => ({
        file: ensureKopf(cacheRoot(), say),
        args: [
          'run',
          '--standalone',
          '--quiet',
          '--namespace',
          namespace,
          join(ROOT, 'bench/operators/kopf_operator.py'),
        ],
      }),
    },
    {
      name: 'causeway',
      command: (namespace) => ({
        file: process.execPath,
        args: [
          join(ROOT, 'gateway/cli/main.ts'),
          'run',
          join(ROOT, 'bench/operators/causeway-operator.ts'),
          '--quiet',
          '--namespace',
          namespace,
        ],
      }),
    },
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
      say(`\n${contender.name}: creating ${OBJECTS} KopfExamples in ${namespace} while it is down`);
      await createBacklog(client, namespace);
      results.push(await measure(contender, namespace, client, controlPlane));
    }
    report(results);
  } finally {
    await controlPlane.stop();
  }
}

async function createBacklog(client: KubeClient, namespace: string): Promise<void> {
  await client.request('/api/v1/namespaces', { method: 'POST', body: { metadata: { name: namespace } } });
  const names = Array.from({ length: OBJECTS }, (_, index) => `kex-${String(index).padStart(5, '0')}`);
  const workers = Array.from({ length: 32 }, async () => {
    for (let name = names.pop(); name; name = names.pop()) {
      await client.request(`/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`, {
        method: 'POST',
        body: {
          apiVersion: 'kopf.dev/v1',
          kind: 'KopfExample',
          metadata: { name },
          spec: { field: 'value' },
        },
      });
    }
  });
  await Promise.all(workers);
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
  const { file, args } = contender.command(namespace);
  const started = performance.now();
  const child = spawn(file, args, {
    cwd: ROOT,
    env: { ...process.env, KUBECONFIG: controlPlane.kubeconfigPath },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<void>((settle) => child.once('exit', () => settle()));
  const outcome = await Promise.race([
    allHandled.promise.then(() => 'done' as const),
    exited.then(() => 'exited' as const),
  ]);
  if (outcome === 'exited') throw new Error(`${contender.name} exited early:\n${stderr}`);
  const finished = performance.now();
  const peakRssMiB = peakRss(child);
  child.kill('SIGTERM');
  await exited;
  await watcher.stop();
  const writes = difference(countWrites(await controlPlane.metrics(), WRITTEN_RESOURCES), before);
  const times = [...handledAt.values()];
  return {
    name: contender.name,
    objects: OBJECTS,
    totalSeconds: (finished - started) / 1000,
    spanSeconds: (Math.max(...times) - Math.min(...times)) / 1000,
    writes,
    peakRssMiB,
  };
}

/** Peak resident memory of a running process, from the kernel's high-water mark. */
function peakRss(child: ChildProcess): number {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  const kib = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1]);
  return kib / 1024;
}

function report(results: Result[]): void {
  const baseline = results.find((result) => result.name.startsWith('kopf'));
  const rows = results.map((result) => {
    const rate = result.objects / result.totalSeconds;
    const spanRate = result.objects / result.spanSeconds;
    const writesPerObject = result.writes.total / result.objects;
    const ratio = (value: number, base: number | undefined) =>
      base ? ` (${(value / base).toFixed(2)}x)` : '';
    const base = baseline && baseline !== result ? baseline : undefined;
    return [
      result.name,
      `${result.totalSeconds.toFixed(2)} s`,
      `${rate.toFixed(0)}/s${ratio(rate, base && base.objects / base.totalSeconds)}`,
      `${spanRate.toFixed(0)}/s${ratio(spanRate, base && base.objects / base.spanSeconds)}`,
      `${writesPerObject.toFixed(2)}`,
      `${result.peakRssMiB.toFixed(0)} MiB${ratio(result.peakRssMiB, base?.peakRssMiB)}`,
      Object.entries(result.writes.byRequest)
        .map(([request, count]) => `${request}: ${count}`)
        .join(', '),
    ];
  });
  const header = ['operator', 'total', 'objects/s', 'span rate', 'writes/object', 'peak RSS', 'writes'];
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] as string).length)),
  );
  const line = (cells: string[]) =>
    cells.map((cell, column) => cell.padEnd(widths[column] as number)).join('  ');
  say(
    `\n${OBJECTS} objects created while the operator was down; time from start until all have status.create_fn`,
  );
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
