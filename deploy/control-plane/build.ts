import { mkdir, mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { isExecutable } from './cached-binary.ts';
import { buildGoPrograms, type GoMainModule } from './go-build.ts';
import { withLock } from './lock.ts';
import { type Progress, seconds, silent } from './progress.ts';
import { ETCD_VERSION, KUBERNETES_VERSION } from './versions.ts';

export interface ControlPlaneBinaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
}

const [K8S_MAJOR, K8S_MINOR] = KUBERNETES_VERSION.slice(1).split('.');

export const KUBERNETES: GoMainModule = {
  name: 'kube',
  path: 'k8s.io/kubernetes',
  version: KUBERNETES_VERSION,
  stagingVersion: `v0${KUBERNETES_VERSION.slice(KUBERNETES_VERSION.indexOf('.'))}`,
  programs: [
    { binary: 'kube-apiserver', package: 'k8s.io/kubernetes/cmd/kube-apiserver' },
    { binary: 'kube-controller-manager', package: 'k8s.io/kubernetes/cmd/kube-controller-manager' },
  ],
  tags: ['selinux', 'notest'],
  // Without these the components report v0.0.0, which clients treat as a very old server.
  ldflags: [
    '-s',
    '-w',
    ...['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version'].flatMap((pkg) => [
      `-X ${pkg}.gitVersion=${KUBERNETES_VERSION}`,
      `-X ${pkg}.gitMajor=${K8S_MAJOR}`,
      `-X ${pkg}.gitMinor=${K8S_MINOR}`,
    ]),
  ],
};

const ETCD: GoMainModule = {
  name: 'etcd',
  path: 'go.etcd.io/etcd/server/v3',
  version: ETCD_VERSION,
  // The server module's root package is etcd's main package.
  programs: [{ binary: 'etcd', package: 'go.etcd.io/etcd/server/v3' }],
  ldflags: ['-s', '-w'],
};

const BINARIES: Record<keyof ControlPlaneBinaries, { file: string; env: string; module: GoMainModule }> = {
  etcd: { file: 'etcd', env: 'CAUSEWAY_ETCD', module: ETCD },
  kubeApiserver: { file: 'kube-apiserver', env: 'CAUSEWAY_KUBE_APISERVER', module: KUBERNETES },
  kubeControllerManager: {
    file: 'kube-controller-manager',
    env: 'CAUSEWAY_KUBE_CONTROLLER_MANAGER',
    module: KUBERNETES,
  },
};

/** Causeway's cache outside the repository, for things that are costly to make and safe to delete. */
export function cacheRoot(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'causeway');
}

/** Keyed by versions, so an upgrade builds afresh next to the old cache instead of mixing with it. */
function controlPlaneCacheDir(): string {
  return join(cacheRoot(), 'control-plane', `k8s-${KUBERNETES_VERSION}_etcd-${ETCD_VERSION}`);
}

/**
 * Binaries named by CAUSEWAY_* variables are used as they are; the others come from the cache, built from
 * the Go module proxy on first use. Every file in the cache's bin/ is complete: builds happen in a
 * temporary directory and each binary is published by an atomic rename.
 */
export async function ensureBinaries({
  onProgress = silent,
}: {
  onProgress?: Progress;
} = {}): Promise<ControlPlaneBinaries> {
  const root = controlPlaneCacheDir();
  const binDir = join(root, 'bin');
  const entries = Object.entries(BINARIES) as [keyof ControlPlaneBinaries, (typeof BINARIES)['etcd']][];
  const binaries = Object.fromEntries(
    entries.map(([key, { file, env }]) => [key, process.env[env] || join(binDir, file)]),
  ) as unknown as ControlPlaneBinaries;
  const missing = async () => {
    const absent = [];
    for (const [key, spec] of entries) {
      if (binaries[key] === join(binDir, spec.file) && !(await isExecutable(binaries[key])))
        absent.push(spec);
    }
    return absent;
  };

  if ((await missing()).length > 0) {
    await mkdir(binDir, { recursive: true });
    const onWait = (pid: number) =>
      onProgress(`waiting for another process (pid ${pid}) to build the control plane…`);
    await withLock(join(root, 'build.lock'), onWait, async () => {
      // Another process may have built them while this one waited.
      const absent = await missing();
      if (absent.length > 0) await build(root, absent, onProgress);
    });
  }

  for (const [key, { env }] of entries) {
    if (!(await isExecutable(binaries[key]))) {
      const origin = process.env[env] ? `${env}=${binaries[key]}` : binaries[key];
      throw new Error(`${origin} is not an executable file`);
    }
  }
  return binaries;
}

async function build(
  root: string,
  absent: { file: string; module: GoMainModule }[],
  onProgress: Progress,
): Promise<void> {
  const started = performance.now();
  // Leftovers of builds whose process died; only the lock holder builds, so none is in use.
  for (const entry of await readdir(root)) {
    if (entry.startsWith('build-')) await rm(join(root, entry), { recursive: true, force: true });
  }
  const logPath = join(root, 'build.log');
  await writeFile(logPath, '');
  const names = absent.map(({ file, module }) => `${file} ${module.version}`).join(', ');
  onProgress(
    `building ${names} from Go modules (first run only, 5 to 10 minutes on 2 cores; log: ${logPath})…`,
  );

  const workDir = await mkdtemp(join(root, 'build-'));
  try {
    for (const module of new Set(absent.map((spec) => spec.module))) {
      const files = new Set(absent.filter((spec) => spec.module === module).map((spec) => spec.file));
      const programs = module.programs.filter((program) => files.has(program.binary));
      const builtDir = await buildGoPrograms(module, programs, { workDir, logPath, onProgress });
      for (const { binary } of programs) await rename(join(builtDir, binary), join(root, 'bin', binary));
    }
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
  onProgress(`built the control plane binaries in ${seconds(started)}`);
}
