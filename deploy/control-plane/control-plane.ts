import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureBinaries } from './build.ts';
import { randomToken } from './credentials.ts';
import { startEtcd } from './etcd.ts';
import { apiRequest } from './https.ts';
import { stopOnInterrupt } from './interrupts.ts';
import { startKubeApiserver } from './kube-apiserver.ts';
import { startKubeControllerManager } from './kube-controller-manager.ts';
import { writeKubeconfig } from './kubeconfig.ts';
import { freePorts } from './ports.ts';
import type { Supervised } from './processes.ts';
import { type Progress, seconds, silent } from './progress.ts';
import { controlPlaneDir } from './temp-dir.ts';

export interface ControlPlane {
  /** https://127.0.0.1:PORT */
  readonly server: string;
  /** A kubeconfig with the cluster, the admin token user and one context, which is current. */
  readonly kubeconfigPath: string;
  /** Bearer token of causeway-admin, a member of system:masters. */
  readonly token: string;
  /** The CA that verifies the apiserver's serving cert. */
  readonly caPem: string;
  /**
   * The CA that signed the client certificate the apiserver presents to admission webhooks: what a
   * webhook server is to trust (`--webhook-client-ca`).
   */
  readonly webhookClientCaPath: string;
  /** Temporary directory with the components' logs; removed by stop(). */
  readonly dir: string;
  /** The apiserver's Prometheus metrics, read as admin. */
  metrics(): Promise<string>;
  /** etcd's client URL (http://127.0.0.1:PORT), for what only etcd does: compaction, say. */
  readonly etcdUrl: string;
  /**
   * Stops a component (with `kill`: SIGTERM, its orderly stop, by default; SIGKILL for a crash), runs
   * `whileDown`, then starts it again (even if `whileDown` failed) with the same flags, port and data,
   * and waits until it is ready.
   * For tests of faults: never on a control plane that other tests share.
   */
  restart(component: RestartableComponent, options?: RestartOptions): Promise<void>;
  /**
   * Compacts etcd's history up to its current revision, as the apiserver does every 5 minutes: a
   * watch resumed from an earlier resourceVersion is then answered 410 Gone (by etcd itself when the
   * apiserver has no watch cache, `watchCache: false`). Returns the revision.
   */
  compact(): Promise<number>;
  /** Idempotent. */
  stop(): Promise<void>;
}

export type RestartableComponent = 'etcd' | 'kube-apiserver';

export interface RestartOptions {
  kill?: 'SIGTERM' | 'SIGKILL';
  /** Runs while the component is down: a test waits here for what the outage must show. */
  whileDown?: () => Promise<unknown>;
}

export interface ControlPlaneOptions {
  onProgress?: Progress;
  /** Garbage collection, namespace deletion and default service accounts; default true. */
  controllerManager?: boolean;
  /** Audit write requests at Metadata level to `auditLogPath`; default false. */
  auditLog?: boolean;
  /**
   * The apiserver's watch cache; default true. Without it, watches are served by etcd itself, so a
   * watch resumed from a position etcd has compacted away is answered 410 Gone.
   */
  watchCache?: boolean;
  /**
   * Requests the apiserver serves at once, read-only and mutating each; its defaults (400, 200) when
   * undefined. API Priority and Fairness shares these among its priority levels: fewer make a small
   * level's one seat certain.
   */
  requestsInFlight?: number;
}

/**
 * etcd, kube-apiserver and (optionally) kube-controller-manager on loopback, in a fresh temporary
 * directory. The processes end with stop(), with SIGINT/SIGTERM, and even if this process is killed.
 */
export async function startControlPlane({
  onProgress = silent,
  controllerManager = true,
  auditLog = false,
  watchCache = true,
  requestsInFlight,
}: ControlPlaneOptions = {}): Promise<ControlPlane & { auditLogPath?: string }> {
  const binaries = await ensureBinaries({ onProgress });
  const started = performance.now();
  const dir = await controlPlaneDir();
  // By name, in the order they first started: a component started again keeps its place.
  const components = new Map<string, Supervised>();
  const stopComponents = async () => {
    // Dependents first, so that none of them logs the loss of what it depends on.
    for (const component of [...components.values()].toReversed()) await component.stop();
  };
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      // From here on a second Ctrl-C ends the process at once; the supervisors still stop the components.
      unregister();
      const stopStarted = performance.now();
      await stopComponents();
      await rm(dir, { recursive: true, force: true });
      onProgress(`control plane stopped in ${seconds(stopStarted)}`);
    })();
    return stopping;
  };
  const unregister = stopOnInterrupt(stop);
  const onSpawn = (component: Supervised) => {
    components.set(component.name, component);
    // Interrupted between two components: this one's readiness wait then fails at once.
    if (stopping) void component.stop();
  };

  try {
    const [clientPort, peerPort, apiPort] = (await freePorts(3)) as [number, number, number];
    onProgress('starting etcd…');
    const etcd = await startEtcd(binaries.etcd, { dir, clientPort, peerPort, onSpawn });

    onProgress('starting kube-apiserver…');
    const auditLogPath = auditLog ? join(dir, 'audit.log') : undefined;
    const token = randomToken();
    const api = await startKubeApiserver(binaries.kubeApiserver, {
      dir,
      etcdUrl: etcd.url,
      port: apiPort,
      token,
      auditLogPath,
      watchCache,
      requestsInFlight,
      onSpawn,
    });
    const kubeconfigPath = join(dir, 'kubeconfig');
    await writeKubeconfig(kubeconfigPath, api);

    if (controllerManager) {
      onProgress('starting kube-controller-manager…');
      await startKubeControllerManager(binaries.kubeControllerManager, { dir, kubeconfigPath, api, onSpawn });
    }
    onProgress(`control plane ready in ${seconds(started)}: ${api.server}, kubeconfig ${kubeconfigPath}`);

    const launchers: Record<RestartableComponent, () => Promise<void>> = {
      etcd: etcd.launch,
      'kube-apiserver': api.launch,
    };
    return {
      server: api.server,
      token: api.token,
      caPem: api.caPem,
      webhookClientCaPath: api.webhookClientCaPath,
      etcdUrl: etcd.url,
      kubeconfigPath,
      dir,
      ...(auditLogPath ? { auditLogPath } : {}),
      async metrics() {
        const response = await apiRequest(api, 'GET', '/metrics');
        if (response.status !== 200) throw new Error(`GET /metrics: ${response.status} ${response.body}`);
        return response.body;
      },
      async compact() {
        // etcd's JSON gateway on its client URL: the revision is in any answer's header.
        const current = await etcdJson(etcd.url, '/v3/kv/range', { key: btoa('\0') });
        const revision = Number((current.header as { revision: string }).revision);
        await etcdJson(etcd.url, '/v3/kv/compaction', { revision: String(revision), physical: true });
        return revision;
      },
      async restart(name, { kill = 'SIGTERM', whileDown } = {}) {
        const component = components.get(name);
        if (!component || component.exit) throw new Error(`${name} is not running`);
        await (kill === 'SIGKILL' ? component.kill('SIGKILL') : component.stop());
        try {
          await whileDown?.();
        } finally {
          // Up again even when `whileDown` failed: the next test still has a control plane.
          const restarted = performance.now();
          await launchers[name]();
          onProgress(`${name} started again in ${seconds(restarted)}`);
        }
      },
      stop,
    };
  } catch (error) {
    unregister();
    await stopComponents();
    // The logs in `dir` are what explains the failure, so it stays.
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`control plane failed to start (logs in ${dir}): ${reason}`, { cause: error });
  }
}

async function etcdJson(url: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${url}${path}`, { method: 'POST', body: JSON.stringify(body) });
  if (!response.ok) throw new Error(`etcd ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}
