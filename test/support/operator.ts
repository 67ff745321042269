/**
 * Runs operators inside a test the way `causeway run` does (function service over HTTP + gateway),
 * against the test control plane.
 */
import { readFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { serveFetch } from '../../gateway/cli/commands/serve/serve.ts';
import type { FetchHandler } from '../../gateway/dispatch/transport.ts';
import { type Gateway, type GatewayOptions, startGateway } from '../../gateway/gateway.ts';
import { applyManifests, parseManifests } from '../../gateway/kube/apply.ts';
import { KubeClient } from '../../gateway/kube/client.ts';
import { ApiError, ignoreNotFound } from '../../gateway/kube/errors.ts';
import { createLogger, type Logger } from '../../gateway/logging.ts';
import { FUNCTION_SERVICE, functionServicesPath } from '../../gateway/services/function-service-objects.ts';
import { PUBLIC_KEYS_FILE } from '../../gateway/services/signing-keys.ts';
import type { Progress } from '../../gateway/state/storage.ts';
import { IN_PROCESS, type KubernetesObject, type ServiceScope } from '../../protocol/index.ts';
import { testCluster } from './cluster.ts';

export const TEST_SECRET = 'test-secret-that-is-at-least-32-bytes-long';

/** The scope tests pin for a service of KopfExamples over HTTP: watched and reviewed. */
export const KOPFEXAMPLES_SCOPE: ServiceScope = {
  resources: ['kopfexamples.kopf.dev'],
  admission: ['kopfexamples.kopf.dev'],
};

export async function kubeConfig(): Promise<KubeConfig> {
  const config = new KubeConfig();
  config.loadFromFile((await testCluster()).kubeconfigPath);
  return config;
}

export async function kubeClient(): Promise<KubeClient> {
  return KubeClient.fromConfig(await kubeConfig());
}

export async function applyFile(path: URL, namespace?: string): Promise<KubernetesObject[]> {
  const objects = parseManifests(readFileSync(path, 'utf8'));
  return applyManifests(await kubeClient(), objects, {
    fieldManager: 'causeway-tests',
    ...(namespace ? { namespace } : {}),
  });
}

/** Creates a KopfExample (the CRD of examples/01-minimal); returns its path. */
export async function createKopfExample(
  namespace: string,
  name: string,
  spec: Record<string, unknown> = {},
  metadata: Partial<KubernetesObject['metadata']> = {},
): Promise<string> {
  const collection = `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`;
  await (await kubeClient()).request(collection, {
    method: 'POST',
    body: { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { ...metadata, name }, spec },
  });
  return `${collection}/${name}`;
}

/**
 * What the apiserver answers a KopfExample of `spec` created with `dryRun=All`, once it refuses it: a
 * webhook's configuration is taken up shortly after it is written, so until then this asks again.
 */
export function admissionRefusal(namespace: string, spec: Record<string, unknown>): Promise<string> {
  return eventually(`a KopfExample of ${JSON.stringify(spec)} refused at admission`, async () => {
    try {
      await (await kubeClient()).request(`/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`, {
        method: 'POST',
        query: { dryRun: 'All' },
        body: { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name: 'probe' }, spec },
      });
      return undefined;
    } catch (error) {
      return error instanceof ApiError ? error.message : undefined;
    }
  });
}

/** Creates a FunctionService (causeway.dev/v1alpha1) in `namespace`, as whoever deploys a service would. */
export async function createFunctionService(
  namespace: string,
  name: string,
  spec: Record<string, unknown>,
): Promise<KubernetesObject> {
  return (await kubeClient()).request<KubernetesObject>(functionServicesPath(namespace), {
    method: 'POST',
    body: {
      apiVersion: `${FUNCTION_SERVICE.group}/${FUNCTION_SERVICE.version}`,
      kind: 'FunctionService',
      metadata: { name },
      spec,
    },
  });
}

/** Collects log lines so tests can assert on what the gateway said. */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger({ level: 'debug', sink: { write: (line) => lines.push(line) } });
  return Object.assign(logger, { lines });
}

export interface RunningOperator {
  gateway: Gateway;
  stop(): Promise<void>;
}

/** A function service for runOperator: an operator, or a wrapper of one that says its name. */
export type NamedHandler = FetchHandler & { readonly name: string };

/**
 * Starts a gateway for `service` (or several services) on the test control plane. Over HTTP by
 * default, each service on a port of its own, the way separate deployments talk; in-process the way
 * `causeway run` does. `namespaces: 'all'` serves every namespace, as a gateway given none does.
 * Over HTTP, a service is pinned to the scope `scopes` gives it, or the one its operator declares;
 * the gateway serves those with neither unscoped (--unscoped).
 */
export async function runOperator(
  service: NamedHandler | readonly NamedHandler[],
  options: Omit<Partial<GatewayOptions>, 'namespaces'> & {
    namespaces: readonly string[] | 'all';
    transport?: 'http' | 'in-process';
    scopes?: Record<string, ServiceScope>;
  },
): Promise<RunningOperator> {
  const { transport = 'http', namespaces, scopes = {}, ...gatewayOptions } = options;
  const services: readonly NamedHandler[] = Array.isArray(service) ? service : [service as NamedHandler];
  const servers =
    transport === 'http'
      ? await Promise.all(services.map((each) => serveFetch(each, { port: 0, host: '127.0.0.1' })))
      : [];
  const pins = services.map(
    (each) => scopes[each.name] ?? (each as FetchHandler)[IN_PROCESS]?.manifest().scope,
  );
  const unscoped = transport === 'http' && pins.some((pin) => pin === undefined);
  const impersonate = await impersonatedAccounts(services, namespaces);
  const gateway = await startGateway({
    functions:
      transport === 'http'
        ? servers.map((server, index) => ({
            name: (services[index] as NamedHandler).name,
            url: server.url,
            ...(pins[index] ? { scope: pins[index] } : {}),
          }))
        : services,
    secret: new TextEncoder().encode(TEST_SECRET),
    kubeconfig: await kubeConfig(),
    logger: memoryLogger(),
    ...(namespaces === 'all' ? {} : { namespaces }),
    ...(impersonate ? { impersonate: impersonate.namespace } : {}),
    ...gatewayOptions,
    settings: { ...gatewayOptions.settings, calls: { unscoped, ...gatewayOptions.settings?.calls } },
  }).catch(async (error) => {
    // A start that fails (a startup handler's, say) leaves no server to keep the test process alive.
    await Promise.all(servers.map((server) => server.close()));
    throw error;
  });
  await gateway.synced;
  return {
    gateway,
    async stop() {
      await gateway.stop();
      await Promise.all(servers.map((server) => server.close()));
      await impersonate?.remove();
    },
  };
}

/** Set, the tests' gateways run with --impersonate (`CAUSEWAY_TEST_IMPERSONATE=1 node --test …`). */
const IMPERSONATING = process.env.CAUSEWAY_TEST_IMPERSONATE === '1';
/** What the services' accounts may do in these runs: write anything, so that the tests test the way, not RBAC. */
const WRITER_ROLE = 'causeway-test-impersonated-writer';

/**
 * Where the tests run with --impersonate: each service's ServiceAccount, of its name, in the first
 * namespace served, bound cluster-wide to a ClusterRole that may create, get and patch anything, and
 * how to remove the bindings; undefined otherwise. The least privilege `causeway rbac --impersonate`
 * prints is tested on its own (test/e2e/hostile/impersonate.test.ts).
 */
async function impersonatedAccounts(
  services: readonly NamedHandler[],
  namespaces: readonly string[] | 'all',
): Promise<{ namespace: string; remove(): Promise<void> } | undefined> {
  if (!IMPERSONATING) return undefined;
  const namespace = namespaces === 'all' ? 'default' : (namespaces[0] ?? 'default');
  const client = await kubeClient();
  const bindings = services.map((service) => `${WRITER_ROLE}-${namespace}-${service.name}`);
  await applyManifests(
    client,
    [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: WRITER_ROLE },
        rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['create', 'get', 'patch'] }],
      },
      ...services.flatMap((service, index) => [
        { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: service.name, namespace } },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRoleBinding',
          metadata: { name: bindings[index] as string },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: WRITER_ROLE },
          subjects: [{ kind: 'ServiceAccount', name: service.name, namespace }],
        },
      ]),
    ] as unknown as KubernetesObject[],
    { fieldManager: 'causeway-tests' },
  );
  return {
    namespace,
    async remove() {
      await Promise.all(
        bindings.map((name) =>
          ignoreNotFound(
            client.request(`/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${name}`, {
              method: 'DELETE',
            }),
          ),
        ),
      );
    },
  };
}

/** Names for `count` objects, `<prefix>-0000` and on, in order. */
export function objectNames(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, index) => `${prefix}-${String(index).padStart(4, '0')}`);
}

/** Creates KopfExamples of these names in `namespace`, with `labels`, 50 at a time (through `client`: the test control plane's by default). */
export async function createKopfExamples(
  namespace: string,
  names: readonly string[],
  labels: Record<string, string> = {},
  client?: KubeClient,
): Promise<void> {
  client ??= await kubeClient();
  for (let start = 0; start < names.length; start += 50) {
    await Promise.all(
      names.slice(start, start + 50).map((name) =>
        client.request(`/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`, {
          method: 'POST',
          body: {
            apiVersion: 'kopf.dev/v1',
            kind: 'KopfExample',
            metadata: { name, labels },
            spec: { field: 'x' },
          },
        }),
      ),
    );
  }
}

/** The create handler's results (`status.create_fn`) of the namespace's KopfExamples, by name. */
export async function createResults(namespace: string, client?: KubeClient): Promise<Map<string, unknown>> {
  client ??= await kubeClient();
  const list = await client.get<{ items: KubernetesObject[] }>(
    `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`,
  );
  return new Map(
    list.items.flatMap((item) =>
      item.status?.create_fn === undefined ? [] : [[item.metadata.name, item.status.create_fn] as const],
    ),
  );
}

/** What a handler stored under `status.<key>` of the object at `path`, once it is there. */
export async function statusOnceThere(path: string, key: string, timeoutMs = 30_000): Promise<unknown> {
  const client = await kubeClient();
  return eventually(
    `status.${key} of ${path}`,
    async () => (await client.get<KubernetesObject>(path)).status?.[key],
    timeoutMs,
  );
}

/**
 * The progress records of a service's handlers on an object (`status.<statusKey>.progress.<service>`),
 * by handler id; undefined when none is kept.
 */
export function progressOf(
  object: KubernetesObject,
  service: string,
  statusKey = 'causeway',
): Record<string, Progress> | undefined {
  const state = object.status?.[statusKey] as
    | { progress?: Record<string, Record<string, Progress>> }
    | undefined;
  return state?.progress?.[service];
}

/** Polls until `read` returns something other than undefined, or fails with `what` at the deadline. */
export async function eventually<T>(
  what: string,
  read: () => Promise<T | undefined>,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The public keys a gateway has published in its ConfigMap (`jwks.json`); undefined until it has. */
export async function readPublishedKeys(location: {
  namespace: string;
  name: string;
}): Promise<string | undefined> {
  const configMap = await ignoreNotFound(
    (await kubeClient()).get<{ data?: Record<string, string> }>(
      `/api/v1/namespaces/${location.namespace}/configmaps/${location.name}`,
    ),
  );
  return configMap?.data?.[PUBLIC_KEYS_FILE];
}
