/**
 * What the benchmarks share: one fresh local control plane with the KopfExample CRD, the two
 * contenders' commands (Kopf from PyPI, the Causeway CLI bundled as it is published), operator
 * processes, backlogs of KopfExamples, polling, percentiles, plain-text tables and the raw figures.
 */
import { execFileSync, spawn } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { cp } from 'node:fs/promises';
import {
  cpus,
  version as kernelBuild,
  release as kernelRelease,
  loadavg,
  machine,
  type as osType,
  tmpdir,
  totalmem,
} from 'node:os';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build, type Plugin } from 'esbuild';
import { bundleCli } from '../deploy/build.ts';
import { type ControlPlane, cacheRoot, ensureBinaries } from '../deploy/control-plane/index.ts';
import { createLogger, DEFAULT_SETTINGS } from '../gateway/index.ts';
import {
  issueServingCertificate,
  type KubeClient,
  newAuthority,
  newKey,
  PRIVATE_KEYS_FILE,
  PUBLIC_KEYS_FILE,
  publicKeys,
  type WatchEvent,
  Watcher,
} from '../gateway/internals.ts';
import { packPackage, userEnvironment, userProject } from '../test/package/project.ts';
import { startPrivateCluster } from '../test/support/private-cluster.ts';
import { ensureKopf, KOPF_VERSION } from './kopf.ts';

export const ROOT = new URL('..', import.meta.url).pathname;
export const KOPF_NAME = `kopf ${KOPF_VERSION}`;
export const KOPFEXAMPLES = '/apis/kopf.dev/v1/namespaces';

/** Watches a namespace's KopfExamples from this process, as the gateway does; `listed` after the first list. */
export function watchKopfExamples(
  client: KubeClient,
  namespace: string,
  onEvent: (event: WatchEvent) => void,
): { watcher: Watcher; listed: Promise<void> } {
  const listed = Promise.withResolvers<void>();
  const watcher = new Watcher({
    client,
    path: `${KOPFEXAMPLES}/${namespace}/kopfexamples`,
    logger: createLogger({ level: 'error' }),
    settings: DEFAULT_SETTINGS.watching,
    onSynced: listed.resolve,
    onEvent,
  });
  watcher.start();
  return { watcher, listed: listed.promise };
}

/**
 * Follows a namespace's KopfExamples from this process: when each first had its create result, by
 * name; their uids; how many were deleted.
 */
export function followResults(client: KubeClient, namespace: string) {
  const handledAt = new Map<string, number>();
  const uids = new Map<string, string>();
  let deleted = 0;
  const listeners = new Set<() => void>();
  const { watcher, listed } = watchKopfExamples(client, namespace, ({ type, object }) => {
    if (type === 'DELETED') deleted++;
    else {
      uids.set(object.metadata.name, object.metadata.uid);
      if (object.status?.create_fn !== undefined && !handledAt.has(object.metadata.name))
        handledAt.set(object.metadata.name, performance.now());
    }
    for (const listener of listeners) listener();
  });
  return {
    handledAt,
    uids,
    listed,
    deleted: () => deleted,
    /** Resolves once `done()` holds; fails if one of `running` exits first, unless it was `killed`. */
    until(done: () => boolean, running: ReadonlyArray<Running & { killed?: boolean }> = []): Promise<void> {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!done()) return;
          listeners.delete(check);
          resolve();
        };
        listeners.add(check);
        for (const each of running) {
          void each.exited.then((stderr) => {
            if (!each.killed) reject(new Error(`an operator exited:\n${stderr}`));
          });
        }
        check();
      });
    },
    stop: () => watcher.stop(),
  };
}

const CLOCK_TICKS_PER_SECOND = 100;

export const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

export const sleep = (ms: number): Promise<void> => new Promise((settle) => setTimeout(settle, ms));

const scratchDirs = new Set<string>();

/** A temporary directory, removed when the benchmark exits, however it ends. */
export function scratchDir(prefix: string): string {
  if (scratchDirs.size === 0) {
    process.once('exit', () => {
      for (const dir of scratchDirs) rmSync(dir, { recursive: true, force: true });
    });
  }
  const dir = mkdtempSync(join(tmpdir(), `causeway-${prefix}-`));
  scratchDirs.add(dir);
  return dir;
}

/** An operator process (or, for the backlog's ceiling, a task) that handles objects once started. */
export interface Running {
  pid?: number;
  /** Settles with the tail of its stderr when it exits, whatever the reason. */
  exited: Promise<string>;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

export interface OperatorProcess extends Running {
  /** SIGKILL (kill -9), then waits for the exit. */
  kill(): Promise<void>;
  /** Whether it has exited (of itself or killed). */
  readonly gone: boolean;
}

/** The processes to measure of what runs: a gateway's and its services' (startTogether), or its one. */
export function pidsOf(running: Running & { pids?: number[] }): number[] {
  return running.pids ?? (running.pid === undefined ? [] : [running.pid]);
}

export function operatorProcess(
  command: Command,
  kubeconfig: string,
  env: Record<string, string> = {},
): OperatorProcess {
  const child = spawn(command.file, command.args, {
    cwd: command.cwd ?? ROOT,
    env: { ...(command.env ?? process.env), ...env, KUBECONFIG: kubeconfig },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  let gone = false;
  const exited = new Promise<string>((settle) =>
    child.once('exit', () => {
      gone = true;
      settle(stderr);
    }),
  );
  return {
    ...(child.pid ? { pid: child.pid } : {}),
    exited,
    get gone() {
      return gone;
    },
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

export interface Command {
  file: string;
  args: string[];
  /** The repository's root unless given. */
  cwd?: string;
  /** The whole environment; this process's unless given. */
  env?: NodeJS.ProcessEnv;
}

/** The Secret of the gateway's signing keys, in the namespace it serves. */
export const SIGNING_KEYS = 'causeway-signing-keys';

/** A gateway and its function services, started by startTogether. */
export interface Together extends OperatorProcess {
  /** Their pids at the start, the gateway's first. */
  pids: number[];
  /** Kills the `index`th service with SIGKILL and starts it again with the same command and port. */
  killService(index: number): Promise<void>;
}

/**
 * Starts a gateway and its function services as they are deployed (the gateway first): the gateway
 * signs with an Ed25519 key kept in a Secret in `namespace`, and the services verify with its public
 * half (`--jwks-file`), the copy kubelet would mount. The key is made here, as the gateway makes it
 * on a first start, so the copy exists before the services start. The result is the gateway's
 * process, whose stop stops them all, with every pid so each can be measured.
 */
export async function startTogether(
  [gateway, ...services]: [Command, ...Command[]],
  cluster: { client: KubeClient; kubeconfig: string; namespace: string },
  env: Record<string, string> = {},
): Promise<Together> {
  const key = newKey(Date.now());
  await cluster.client.patch(
    `/api/v1/namespaces/${cluster.namespace}/secrets/${SIGNING_KEYS}`,
    'apply',
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: SIGNING_KEYS, namespace: cluster.namespace },
      data: { [PRIVATE_KEYS_FILE]: Buffer.from(JSON.stringify([key])).toString('base64') },
    },
    { fieldManager: 'causeway-bench', force: true },
  );
  const jwks = join(scratchDir('bench-keys'), PUBLIC_KEYS_FILE);
  writeFileSync(jwks, JSON.stringify(publicKeys([key])));
  const commands = [
    withArgs(gateway, ['--signing-keys', `${cluster.namespace}/${SIGNING_KEYS}`]),
    ...services.map((service) => withArgs(service, ['--jwks-file', jwks])),
  ];
  const processes = commands.map((command) => operatorProcess(command, cluster.kubeconfig, env));
  const main = processes[0] as OperatorProcess;
  return {
    ...(main.pid === undefined ? {} : { pid: main.pid }),
    pids: processes.flatMap((running) => (running.pid === undefined ? [] : [running.pid])),
    exited: main.exited,
    get gone() {
      return main.gone;
    },
    kill: () => main.kill(),
    stop: async () => {
      await Promise.all(processes.map((running) => running.stop()));
    },
    async killService(index) {
      const service = processes[index + 1];
      if (!service) throw new Error(`no service ${index}: ${services.length} started`);
      await service.kill();
      processes[index + 1] = operatorProcess(commands[index + 1] as Command, cluster.kubeconfig, env);
    },
  };
}

/** The command with more arguments. */
export function withArgs(command: Command, args: string[]): Command {
  return { ...command, args: [...command.args, ...args] };
}

/** How to start each contender with a given operator file, serving one namespace. */
export interface Contenders {
  kopf(operator: string, namespace: string): Command;
  /**
   * `causeway run`: the gateway and the functions in one process, alone (--standalone) as Kopf runs
   * here, unless given other peering flags.
   */
  causeway(operator: string, namespace: string, peering?: string[]): Command;
  /**
   * The two deployed apart: `causeway serve` on a port, over HTTPS with a certificate of a CA of the
   * benchmark's own (`tls`), as a gateway's --function-tls gives it, or over plain HTTP if `tls` is
   * false; and `causeway gateway` calling it there over HTTPS, trusting that CA only.
   */
  causewayServe(operator: string, port: number, options?: { tls: boolean }): Command;
  causewayGateway(port: number, namespace: string): Command;
  /** The certificate causewayServe serves with, and the CA that signed it. */
  tls: FunctionCertificates;
  /** The same at another commit (`--compare <ref>`), for an A/B in one run; absent unless asked. */
  baseline?: {
    ref: string;
    causeway(operator: string, namespace: string): Command;
    causewayServe: Contenders['causewayServe'];
    causewayGateway: Contenders['causewayGateway'];
  };
}

/** A CA's certificate and a serving certificate it signs, with its key: as PEM, and as files of it. */
export interface FunctionCertificates {
  pem: { ca: string; cert: string; key: string };
  files: { ca: string; cert: string; key: string };
}

/** A CA of the benchmark's own and a certificate it signs for 127.0.0.1, also as files in `dir`. */
async function functionCertificates(dir: string): Promise<FunctionCertificates> {
  const authority = await newAuthority('causeway-bench-functions');
  const serving = await issueServingCertificate(authority, ['127.0.0.1']);
  const pem = { ca: authority.cert, cert: serving.cert, key: serving.key };
  const files = {
    ca: join(dir, 'functions-ca.pem'),
    cert: join(dir, 'functions.pem'),
    key: join(dir, 'functions-key.pem'),
  };
  for (const part of ['ca', 'cert', 'key'] as const) writeFileSync(files[part], pem[part]);
  return { pem, files };
}

/** The scope the benchmarks' gateways pin for their operators: KopfExamples, watched and reviewed. */
const BENCH_SCOPE = join(ROOT, 'bench/operators/scope.yaml');

/**
 * The CLI at `ref`, bundled as this commit's is: a worktree of it (sharing this checkout's
 * node_modules) in `dir`, removed with the scratch directories (`dir` is one: made after the first).
 */
async function bundleCliAt(ref: string, dir: string): Promise<{ entry: string; checkout: string }> {
  const checkout = join(dir, 'checkout');
  execFileSync('git', ['worktree', 'add', '--detach', checkout, ref], { cwd: ROOT, stdio: 'ignore' });
  // After the scratch directories are removed (their listener came first): forgets the worktree.
  process.on('exit', () => execFileSync('git', ['worktree', 'prune'], { cwd: ROOT, stdio: 'ignore' }));
  symlinkSync(join(ROOT, 'node_modules'), join(checkout, 'node_modules'));
  return { entry: await bundleCli(join(dir, 'cli'), checkout), checkout };
}

/**
 * Bundles the Causeway CLI (deploy/build.ts) and installs Kopf into its cached virtualenv. The CLI runs
 * as a user starts it, `node causeway.mjs <command>` with no flags of its own, unless given `nodeFlags`
 * (`--node-flags` of the benchmarks that take it).
 */
export async function prepareContenders(nodeFlags: string[] = [], compare?: string): Promise<Contenders> {
  const dir = scratchDir('bench');
  const bundle = await bundleCli(dir);
  const operators = await bundleOperators(join(dir, 'operators'));
  // A profile of the bundle names its long lines only: the bundle and its source maps go beside the
  // profiles (`bundle`, and `bundle-baseline` for `--compare`), for bench/cpu-profile.ts to map each
  // frame back to its source.
  const profiles = nodeFlags.find((flag) => flag.startsWith('--cpu-prof-dir='))?.split('=')[1];
  if (profiles) await cp(dir, join(profiles, 'bundle'), { recursive: true });
  // Without the hooks this repository's scripts load (NODE_OPTIONS), nor Node's type stripper, which
  // they bring in and which alone holds some 18 MiB.
  const { NODE_OPTIONS: _hooks, ...env } = process.env;
  const cliOf =
    (entry: string) =>
    (args: string[]): Command => ({
      file: process.execPath,
      args: [...nodeFlags, entry, ...args, '--quiet'],
      env,
    });
  const cli = cliOf(bundle);
  /**
   * `causeway gateway` calling `bench`, its scope pinned where that CLI knows of scopes, alone as Kopf
   * runs here (--standalone) where that CLI peers.
   */
  const tls = await functionCertificates(dir);
  const gatewayWith =
    (run: (args: string[]) => Command, scoped: boolean, peers: boolean, impersonates: boolean) =>
    (port: number, namespace: string) =>
      run([
        'gateway',
        '--functions',
        `bench=https://127.0.0.1:${port}`,
        '--functions-ca',
        tls.files.ca,
        ...(scoped ? ['--function-scope', `bench=${BENCH_SCOPE}`] : []),
        ...(peers ? ['--standalone'] : []),
        // As the shipped layouts run it: a service's children and events written as its account.
        ...(impersonates ? ['--impersonate'] : []),
        '--namespace',
        namespace,
      ]);
  const serveWith =
    (run: (args: string[]) => Command, bundled: (operator: string) => string) =>
    (operator: string, port: number, { tls: https } = { tls: true }) =>
      run([
        'serve',
        bundled(operator),
        '--host',
        '127.0.0.1',
        '--port',
        String(port),
        ...(https ? ['--tls-cert', tls.files.cert, '--tls-key', tls.files.key] : []),
      ]);
  let baseline: Contenders['baseline'];
  if (compare) {
    const baselineDir = scratchDir('bench-baseline');
    const { entry, checkout } = await bundleCliAt(compare, baselineDir);
    // Its operators with its own SDK: what the function service verifies and answers with is the ref's too.
    const baselineOperators = await bundleOperators(join(baselineDir, 'operators'), checkout);
    if (profiles) await cp(join(baselineDir, 'cli'), join(profiles, 'bundle-baseline'), { recursive: true });
    // The gateway's own help; a CLI older than per-command help prints all of it for any command.
    const help = execFileSync(process.execPath, [entry, 'gateway', '--help'], { env, encoding: 'utf8' });
    const run = cliOf(entry);
    baseline = {
      ref: compare,
      causeway: (operator, namespace) =>
        run([
          'run',
          baselineOperators(operator),
          '--namespace',
          namespace,
          ...(help.includes('--standalone') ? ['--standalone'] : []),
        ]),
      causewayServe: serveWith(run, baselineOperators),
      causewayGateway: gatewayWith(
        run,
        help.includes('--function-scope'),
        help.includes('--standalone'),
        help.includes('--impersonate'),
      ),
    };
  }
  const kopf = ensureKopf(cacheRoot(), say);
  return {
    kopf: (operator, namespace) => ({
      file: kopf,
      args: [
        'run',
        '--standalone',
        '--quiet',
        '--namespace',
        namespace,
        join(ROOT, 'bench/operators', operator),
      ],
    }),
    causeway: (operator, namespace, peering = ['--standalone']) =>
      cli(['run', operators(operator), '--namespace', namespace, ...peering]),
    causewayServe: serveWith(cli, operators),
    causewayGateway: gatewayWith(cli, true, true, true),
    tls,
    ...(baseline ? { baseline } : {}),
  };
}

/**
 * Bundles the Causeway operators of bench/operators into JavaScript in `outdir`, as an image ships
 * a user's operator compiled; `causeway/*` are the sources of the checkout at `root` (this one unless
 * given). Returns the path of an operator's bundle by the name of its source.
 */
async function bundleOperators(outdir: string, root = ROOT): Promise<(operator: string) => string> {
  const sources = join(root, 'bench/operators');
  const names = readdirSync(sources).filter((name) => name.endsWith('.ts'));
  await build({
    entryPoints: names.map((name) => join(sources, name)),
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    logLevel: 'warning',
    plugins: [sourcesAt(root)],
  });
  return (operator) => {
    if (!names.includes(operator)) throw new Error(`no operator ${operator} in bench/operators`);
    return join(outdir, operator.replace(/\.ts$/, '.mjs'));
  };
}

/** esbuild: `causeway/functions` (and the other entries) bundle the sources of the checkout at `root`. */
function sourcesAt(root: string): Plugin {
  return {
    name: 'causeway-sources-at',
    setup(build) {
      build.onResolve({ filter: /^causeway\/(functions|gateway|protocol|testing)$/ }, ({ path }) => ({
        path: join(root, path.slice('causeway/'.length), 'index.ts'),
      }));
    },
  };
}

export interface BenchCluster {
  controlPlane: ControlPlane;
  client: KubeClient;
}

/**
 * A fresh control plane without kube-controller-manager (so nothing but the contenders and the
 * benchmark write to it), with the KopfExample CRD of examples/01-minimal: the tests' private cluster,
 * whose `controlPlane.restart` kills and restarts the apiserver or etcd on the same port and data.
 */
export async function withCluster<T>(task: (cluster: BenchCluster) => Promise<T>): Promise<T> {
  const cluster = await startPrivateCluster({ onProgress: (line) => say(`  ${line}`) });
  try {
    return await task({ controlPlane: cluster.controlPlane, client: cluster.client });
  } finally {
    await cluster.stop();
  }
}

/** One handler call, as the handler recorded it. */
export interface Call {
  at: number;
  name: string;
  key: string;
  retry: number;
  /** Which run of the operator made it, as the reader counts them. */
  run: number;
}

/** The handlers' append-only record of calls, read as it grows. */
export class CallLog {
  readonly calls: Call[] = [];
  readonly #path: string;
  #offset = 0;

  constructor(path: string) {
    this.#path = path;
  }

  /** Whether lines were appended since the last read. */
  grown(): boolean {
    return statSync(this.#path).size > this.#offset;
  }

  /** The complete lines appended since the last read, as calls of `run`. */
  read(run: number): Call[] {
    const text = readFileSync(this.#path).subarray(this.#offset).toString('utf8');
    const complete = text.slice(0, text.lastIndexOf('\n') + 1);
    this.#offset += Buffer.byteLength(complete);
    const calls = complete
      .split('\n')
      .filter(Boolean)
      .map((line): Call => {
        const [at, name, key, retry] = line.split(' ');
        if (!at || !name || !key || retry === undefined) throw new Error(`malformed call line: ${line}`);
        return { at: Number(at), name, key, retry: Number(retry), run };
      });
    this.calls.push(...calls);
    return calls;
  }
}

/** A small seeded generator of uniform numbers in [0, 1). */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** `count` names, `<prefix>-00000`…, in order. */
export function objectNames(count: number, prefix = 'kex'): string[] {
  return Array.from({ length: count }, (_, index) => `${prefix}-${String(index).padStart(5, '0')}`);
}

/** Runs `task` for every name, `concurrency` at a time. */
export async function forEachName(
  names: readonly string[],
  concurrency: number,
  task: (name: string) => Promise<unknown>,
): Promise<void> {
  const pending = [...names];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let name = pending.pop(); name; name = pending.pop()) await task(name);
    }),
  );
}

export async function createNamespace(client: KubeClient, namespace: string): Promise<void> {
  await client.request('/api/v1/namespaces', { method: 'POST', body: { metadata: { name: namespace } } });
}

/** KopfExamples of these names in `namespace`, created `concurrency` at a time. */
export async function createKopfExamples(
  client: KubeClient,
  namespace: string,
  names: readonly string[],
  concurrency: number,
): Promise<void> {
  await forEachName(names, concurrency, (name) =>
    client.request(`${KOPFEXAMPLES}/${namespace}/kopfexamples`, {
      method: 'POST',
      body: { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name }, spec: { field: 'value' } },
    }),
  );
}

/** A namespace with `count` KopfExamples (`kex-00000`…), created 32 at a time. */
export async function createBacklog(client: KubeClient, namespace: string, count: number): Promise<void> {
  await createNamespace(client, namespace);
  await createKopfExamples(client, namespace, objectNames(count), 32);
}

/** The value `share` of the way through `sorted` (ascending): the lower of two, not interpolated. */
export function quantile(sorted: readonly number[], share: number): number | undefined {
  return sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))];
}

/** The middle one of `values`, the upper of two middle ones; `none` when there is none. */
export function median(values: readonly number[], none = Number.NaN): number {
  return (
    quantile(
      [...values].sort((a, b) => a - b),
      0.5,
    ) ?? none
  );
}

/** The p50, p90, p99 and max of `values` (latencies), 0 each when there are none. */
export function percentiles(values: readonly number[]): {
  p50: number;
  p90: number;
  p99: number;
  max: number;
} {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (share: number) => quantile(sorted, share) ?? 0;
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: sorted.at(-1) ?? 0 };
}

/** Polls `probe` until it returns something other than undefined; throws after `timeoutMs`. */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  { timeoutMs = 30_000, intervalMs = 50 } = {},
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline)
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/**
 * Resident memory now and at its peak (the kernel's high-water mark), and CPU time, of a running process
 * and its descendants: whatever a launcher starts is counted with it. The peak is the sum of each
 * process's own, an upper bound when there is more than one.
 */
export function processUsage(pid: number): { rssMiB: number; peakRssMiB: number; cpuSeconds: number } {
  const usage = { rssMiB: 0, peakRssMiB: 0, cpuSeconds: 0 };
  for (const each of [pid, ...descendants(pid)]) {
    const status = readFileSync(`/proc/${each}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1]);
    // Fields 14 and 15 of /proc/<pid>/stat, counted after the parenthesised command name.
    const stat = readFileSync(`/proc/${each}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    usage.rssMiB += kib('VmRSS') / 1024;
    usage.peakRssMiB += kib('VmHWM') / 1024;
    usage.cpuSeconds += (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  }
  return usage;
}

/**
 * Resolves once the processes have been quiet for a moment: together under `share` of a core over the
 * last `windowMs` of their CPU time, sampled every `everyMs`. True then, false if they were still busy
 * after `timeoutMs`.
 */
export async function untilQuiet(
  pids: readonly number[],
  { windowMs = 1000, share = 0.02, everyMs = 100, timeoutMs = 60_000 } = {},
): Promise<boolean> {
  const cpuSeconds = () => pids.reduce((sum, pid) => sum + processUsage(pid).cpuSeconds, 0);
  const samples: { at: number; cpuSeconds: number }[] = [];
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const now = { at: performance.now(), cpuSeconds: cpuSeconds() };
    samples.push(now);
    const windowStart = samples.findLast((sample) => now.at - sample.at >= windowMs);
    if (windowStart && now.cpuSeconds - windowStart.cpuSeconds <= (share * (now.at - windowStart.at)) / 1000)
      return true;
    if (now.at > deadline) return false;
    await sleep(everyMs);
  }
}

/** The pids of a process's children, theirs, and so on (each of its threads lists those it started). */
function descendants(pid: number): number[] {
  const children = readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
  );
  return children.flatMap((child) => [child, ...descendants(child)]);
}

/** `--node-flags="a b"` as a list; none when absent. */
export function nodeFlagsOption(value: string | undefined): string[] {
  return value === undefined ? [] : value.split(/\s+/).filter(Boolean);
}

/** Left-aligned columns, two spaces apart. */
export function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column] as number))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

/** The commit a run measures, whether the tree had other changes, and the load, read when the run starts. */
const AT_START = (() => {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  return {
    commit: git('rev-parse', 'HEAD'),
    changed: git('status', '--porcelain', '--untracked-files=no') !== '',
    loadAverage: loadavg(),
  };
})();

/** Python's version and the installed distributions', as the virtualenv that ran Kopf has them. */
const PYTHON_SIDE_VERSIONS = `import importlib.metadata as m, json, platform
print(json.dumps({'python': platform.python_version(), 'kopf': m.version('kopf'), 'uvloop': m.version('uvloop')}))`;

/**
 * What a run was measured with, for its raw figures: the commit, the machine, its load average (1, 5
 * and 15 minutes) at the start and at the end of the run, and the versions of what ran, each asked of
 * the program itself (so a control plane named by CAUSEWAY_* variables reports its own).
 */
async function measuredWith(versions: Record<string, string | undefined>) {
  const output = (file: string, ...args: string[]) => execFileSync(file, args, { encoding: 'utf8' }).trim();
  const { etcd, kubeApiserver } = await ensureBinaries();
  const python = join(dirname(ensureKopf(cacheRoot(), say)), 'python');
  const pythonSide = JSON.parse(output(python, '-c', PYTHON_SIDE_VERSIONS)) as Record<string, string>;
  const os = /^PRETTY_NAME="?([^"\n]*)/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1];
  return {
    commit: AT_START.commit,
    changed: AT_START.changed,
    machine: {
      cpu: cpus()[0]?.model,
      cpus: cpus().length,
      memoryMiB: Math.round(totalmem() / 2 ** 20),
      os,
      kernel: `${osType()} ${kernelRelease()} ${kernelBuild()} ${machine()}`,
      loadAverage: { start: AT_START.loadAverage, end: loadavg() },
    },
    versions: {
      node: process.version, // the Causeway CLI's too: prepareContenders runs it on this Node
      // "Kubernetes v1.34.10"; "etcd Version: 3.6.14" on the first of etcd's lines.
      kubeApiserver: output(kubeApiserver, '--version').split(' ').at(-1),
      etcd: /^etcd Version: (\S+)/m.exec(output(etcd, '--version'))?.[1],
      ...pythonSide,
      ...versions,
    },
  };
}

/**
 * Writes the raw figures to bench/results/<kind>-<time>.json.gz with what they were measured with
 * (measuredWith, and the `versions` of what else ran), and says where. Gzipped, as every clone
 * carries the ones a document quotes (commit those): `zcat` reads them (docs/benchmarks.md).
 */
export async function saveResults(
  kind: string,
  results: unknown,
  versions: Record<string, string | undefined> = {},
): Promise<void> {
  const out = join(ROOT, 'bench/results');
  mkdirSync(out, { recursive: true });
  const file = join(out, `${kind}-${new Date().toISOString().replaceAll(':', '-')}.json.gz`);
  const text = `${JSON.stringify({ ...(await measuredWith(versions)), results }, null, 2)}\n`;
  writeFileSync(file, gzipSync(text, { level: 9 }));
  const { commit, changed } = AT_START;
  say(`\nraw figures: ${file} (commit ${commit.slice(0, 7)}${changed ? ', with uncommitted changes' : ''})`);
}

/**
 * `causeway run` of the backlog's operator as a user starts it, `flags` then the namespace: from
 * `project`, where the packed package is installed with the operator beside it (a project npm would
 * make), and from the sources, with the same operator.
 */
export async function causewayRunStarts(
  project: string,
  flags: readonly string[],
): Promise<{ installed(namespace: string): Command; sources(namespace: string): Command }> {
  await userProject(project, [await packPackage(project)]);
  copyFileSync(join(ROOT, 'bench/operators/causeway-operator.ts'), join(project, 'operator.ts'));
  return {
    installed: (namespace) => ({
      file: join(project, 'node_modules/.bin/causeway'),
      args: ['run', 'operator.ts', ...flags, namespace],
      cwd: project,
      env: userEnvironment(),
    }),
    sources: (namespace) => ({
      file: process.execPath,
      args: [
        '--import',
        join(ROOT, 'test/support/sources.ts'),
        join(ROOT, 'gateway/cli/main.ts'),
        'run',
        join(ROOT, 'bench/operators/causeway-operator.ts'),
        ...flags,
        namespace,
      ],
      env: userEnvironment(),
    }),
  };
}
