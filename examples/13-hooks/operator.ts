/**
 * The operator's activities (Kopf's example 13-hooks): startup handlers, called before anything is
 * watched (one of them failing twice first); a cleanup handler, called as the gateway stops; probes,
 * whose results the liveness endpoint reports (`--liveness`); and a login handler, which the gateway
 * logs in through when told to (`--login-from hooks`). Every pod seen starts a task in this process,
 * which the cleanup stops.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { operator, TemporaryError } from 'causeway/functions';

const op = operator({ name: 'hooks', scope: { resources: ['pods'] } });

/** A pod's task: how often it has served so far, and how to stop it. */
interface Task {
  served: number;
  timer: ReturnType<typeof setInterval>;
}

/** Tasks by namespace and pod name; made by a startup handler, so no pod can come before it. */
let tasks: Map<string, Map<string, Task>> | undefined;

op.on.startup(async function startup_fn_simple({ logger }) {
  logger.info('initialising the task registry...');
  tasks = new Map();
});

op.on.startup(async function startup_fn_retried({ retry, logger }) {
  if (retry < 3) throw new TemporaryError(`going to succeed in ${3 - retry}s`, { delay: 1 });
  logger.info('starting retried...');
});

op.on.cleanup(async function cleanup_fn({ logger }) {
  logger.info('cleaning up...');
  for (const byName of tasks?.values() ?? []) {
    for (const task of byName.values()) clearInterval(task.timer);
  }
  tasks?.clear();
  logger.info('all pod-tasks are requested to stop...');
});

// What the gateway's own kubeconfig login does, shrunk for the demo: the credentials of $KUBECONFIG
// (or ~/.kube/config), as a service that keeps credentials of its own would return them.
op.on.login(async function login_fn({ logger }) {
  logger.info('logging in...');
  const config = new KubeConfig();
  config.loadFromDefault();
  const cluster = config.getCurrentCluster();
  const user = config.getCurrentUser();
  if (!cluster || !user) throw new Error('the kubeconfig has no current context');
  const pem = (base64: string | undefined) => (base64 ? Buffer.from(base64, 'base64').toString() : undefined);
  const [caData, certificateData, keyData] = [cluster.caData, user.certData, user.keyData].map(pem);
  return {
    server: cluster.server,
    ...(user.token ? { token: user.token } : {}),
    ...(certificateData && keyData ? { certificateData, keyData } : {}),
    ...(caData ? { caData } : {}),
    insecure: cluster.skipTLSVerify,
    expiration: new Date(Date.now() + 30_000).toISOString(),
  };
});

op.on.probe(async function tasks_count() {
  return [...(tasks?.values() ?? [])].reduce((count, byName) => count + byName.size, 0);
});

op.on.probe(async function monitored_objects() {
  return Object.fromEntries(
    [...(tasks ?? [])].map(([namespace, byName]) => [namespace, [...byName.keys()].sort()]),
  );
});

op.on.event('pods', async function pod_task({ namespace = '', name, logger }) {
  if (!tasks) throw new Error('the startup handlers run before any pod is seen');
  const byName = tasks.get(namespace) ?? new Map<string, Task>();
  tasks.set(namespace, byName);
  if (byName.has(name)) return;
  const task: Task = { served: 0, timer: setInterval(() => task.served++, 1000) };
  task.timer.unref(); // a task of the demo: never what keeps the process running
  byName.set(name, task);
  logger.info(`a task for ${namespace}/${name} is started`);
});

export default op;
