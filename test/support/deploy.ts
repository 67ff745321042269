/**
 * What the tests of deploy/'s overlays share: rendering, finding objects, and running the bundled CLI
 * as the image does, the gateway and the function service in the order a cluster starts them.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from './cluster.ts';
import { applyRbac, CLUSTER_SCOPED, kubectlOk, type Manifest, parseYaml } from './kubectl.ts';
import { eventually, kubeClient, readPublishedKeys } from './operator.ts';
import { freePort } from './processes.ts';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));

export interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  capabilities?: { drop?: string[]; add?: string[] };
  seccompProfile?: { type: string };
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string }; secretKeyRef?: { name: string; key: string } };
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
}

export interface Volume {
  name: string;
  configMap?: { name: string; items?: Array<{ key: string; path: string }>; optional?: boolean };
  secret?: { secretName: string };
}

export interface Container {
  name: string;
  image: string;
  args?: string[];
  env?: EnvVar[];
  volumeMounts?: VolumeMount[];
  ports?: Array<{ name?: string; containerPort: number }>;
  readinessProbe?: { httpGet?: { path: string; port: string | number; scheme?: string } };
  livenessProbe?: { httpGet?: { path: string; port: string | number; scheme?: string } };
  startupProbe?: { httpGet?: { path: string; port: string | number } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: SecurityContext;
}

export interface PodSpec {
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  securityContext?: SecurityContext;
  containers: Container[];
  volumes?: Volume[];
}

export interface Deployment extends Manifest {
  spec: {
    replicas?: number;
    strategy?: {
      type: string;
      rollingUpdate?: { maxSurge?: number | string; maxUnavailable?: number | string };
    };
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
  };
}

export interface Service extends Manifest {
  spec: { selector: Record<string, string>; ports: Array<{ port: number; targetPort?: string | number }> };
}

export interface Binding extends Manifest {
  roleRef: { kind: string; name: string };
  subjects: Array<{ kind: string; name: string; namespace?: string }>;
}

/** Where an overlay puts things: the gateway's own namespace, and the namespace of the objects it serves. */
export interface Placement {
  gateway: string;
  objects: string;
}

/** The namespaces deploy/examples name: the gateway's own, and the example's objects'. */
export const LAYOUT: Placement = { gateway: 'causeway-system', objects: 'kopfexample' };

/**
 * `kubectl kustomize` of an overlay, in the namespaces of `placement` instead of the layout's (a test's
 * own): each namespace it names, as an object's namespace, a binding's subject's, an argument, or the
 * gateway's in a URL, is replaced.
 */
export async function render(overlay: string, placement: Placement = LAYOUT): Promise<Manifest[]> {
  const rendered = (await kubectlOk(['kustomize', overlay]))
    .replaceAll(LAYOUT.gateway, placement.gateway)
    // An object's namespace and --namespace's value, not the service's account named as the objects' namespace is.
    .replace(
      new RegExp(`^(\\s*namespace: |\\s*- --namespace\\n\\s*- )${LAYOUT.objects}$`, 'gm'),
      `$1${placement.objects}`,
    );
  return parseYaml(rendered);
}

/**
 * Every namespaced object of an overlay is in the gateway's namespace but the gateway's rights on the
 * objects it serves (a Role and its binding there), and every binding names the gateway's account, or
 * a function service's (--impersonate), in the gateway's namespace too.
 */
export function assertPlacedAndBound(
  objects: Manifest[],
  placement: Placement,
  serviceAccount: string,
): void {
  for (const object of objects) {
    const expected = CLUSTER_SCOPED.has(object.kind)
      ? undefined
      : object.kind === 'Role' || object.kind === 'RoleBinding'
        ? [placement.gateway, placement.objects]
        : [placement.gateway];
    const where = `namespace of ${object.kind} ${object.metadata.name}`;
    if (expected === undefined) assert.equal(object.metadata.namespace, undefined, where);
    else
      assert.ok(expected.includes(object.metadata.namespace ?? ''), `${where}: ${object.metadata.namespace}`);
  }
  for (const binding of objects.filter((object) => object.kind.endsWith('Binding')) as Binding[]) {
    // A function service's account (--impersonate) is bound to its own Role, named after it.
    const service = binding.metadata.labels?.['app.kubernetes.io/component'] === 'function-service';
    assert.deepEqual(
      binding.subjects,
      [
        {
          kind: 'ServiceAccount',
          name: service ? binding.metadata.name : serviceAccount,
          namespace: placement.gateway,
        },
      ],
      `subjects of ${binding.kind} ${binding.metadata.name}`,
    );
  }
}

export function find<T extends Manifest>(objects: Manifest[], kind: string, name: string): T {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  assert.ok(found, `no ${kind} ${name} in the rendered manifests`);
  return found as T;
}

export function onlyContainer(deployment: Deployment): Container {
  const [container, ...more] = deployment.spec.template.spec.containers;
  assert.ok(container, `${deployment.metadata.name} has no container`);
  assert.equal(more.length, 0, `${deployment.metadata.name} has more than one container`);
  return container;
}

/** The value that follows `flag` in `args`. */
export function flagValue(args: string[], flag: string): string | undefined {
  const index = args.indexOf(flag);
  return index < 0 ? undefined : args[index + 1];
}

export function withFlag(args: string[], flag: string, value: string): string[] {
  const index = args.indexOf(flag);
  assert.ok(index >= 0, `${flag} is not among ${args.join(' ')}`);
  return args.map((arg, i) => (i === index + 1 ? value : arg));
}

/** A container's arguments as they run in `namespace`: the downward API's $(POD_NAMESPACE) filled in. */
export const inNamespace = (args: string[], namespace: string): string[] =>
  args.map((arg) => arg.replaceAll('$(POD_NAMESPACE)', namespace));

/** A function service's container arguments, to serve on this host's `port` instead of the pod's. */
export const servedOnLoopback = (args: string[], port: number): string[] => [
  ...withFlag(args, '--port', String(port)),
  '--host',
  '127.0.0.1',
];

/**
 * The gateway's arguments with its liveness endpoint on a free loopback port instead of the
 * container's 0.0.0.0:8080, which tests running at once would share, and that endpoint's URL.
 */
export async function withFreeLiveness(args: string[]): Promise<{ args: string[]; liveness: string }> {
  const liveness = `http://127.0.0.1:${await freePort()}/healthz`;
  return { args: withFlag(args, '--liveness', liveness), liveness };
}

/** Cluster-scoped names are shared by every test: give them the test namespace's name as a suffix. */
export function uniqueClusterNames(objects: Manifest[], suffix: string): Manifest[] {
  const renamed = (name: string) => `${name}-${suffix}`;
  return objects.map((object) => {
    if (!CLUSTER_SCOPED.has(object.kind)) return object;
    const copy = structuredClone(object);
    copy.metadata.name = renamed(copy.metadata.name);
    if (copy.kind === 'ClusterRoleBinding') {
      const binding = copy as Binding;
      binding.roleRef.name = renamed(binding.roleRef.name);
    }
    return copy;
  });
}

/** Applies the service accounts and the RBAC of the overlay for real, in the namespaces of `placement`. */
export async function installRbac(t: TestContext, overlay: string, placement: Placement): Promise<void> {
  await applyRbac(t, uniqueClusterNames(await render(overlay, placement), placement.gateway));
}

/** Two namespaces of a test's own: one for the gateway, one for the objects it serves. */
export async function testPlacement(t: TestContext): Promise<Placement> {
  return { gateway: await testNamespace(t), objects: await testNamespace(t) };
}

/**
 * Where the file at `path` in the deployment's container comes from: the volume mounted over its
 * directory (its ConfigMap or Secret, as the manifest says it), the key, and whether it is read-only.
 */
export function mountedFile(
  deployment: Deployment,
  path: string,
): { configMap?: Volume['configMap']; secret?: Volume['secret']; key: string; readOnly: boolean } {
  const mount = onlyContainer(deployment).volumeMounts?.find((each) =>
    path.startsWith(`${each.mountPath.replace(/\/$/, '')}/`),
  );
  assert.ok(mount, `${deployment.metadata.name}: no volume is mounted over ${path}`);
  // kubelet swaps in a changed ConfigMap's files under a directory mount, never under a subPath.
  assert.equal(mount.subPath, undefined, `${path}: a subPath mount is never updated`);
  const volume = deployment.spec.template.spec.volumes?.find((each) => each.name === mount.name);
  assert.ok(
    volume?.configMap || volume?.secret,
    `${deployment.metadata.name}: ${mount.name} is neither a ConfigMap nor a Secret volume`,
  );
  return {
    ...(volume.configMap ? { configMap: volume.configMap } : { secret: volume.secret }),
    key: relative(mount.mountPath, path),
    readOnly: mount.readOnly === true,
  };
}

/**
 * The gateway's arguments with each scope its --function-scope reads from a mounted ConfigMap written
 * to `dir`, as the kubelet would mount it there, and the argument pointing at that copy.
 */
export async function withMountedScopes(
  args: string[],
  deployment: Deployment,
  objects: readonly Manifest[],
  dir: string,
): Promise<string[]> {
  const copies = args.map(async (arg, index) => {
    if (args[index - 1] !== '--function-scope') return arg;
    const [name, path] = arg.split('=') as [string, string];
    const { configMap, key } = mountedFile(deployment, path);
    const source = objects.find(
      (object) => object.kind === 'ConfigMap' && object.metadata.name === configMap?.name,
    );
    const data = (source as { data?: Record<string, string> } | undefined)?.data?.[key];
    assert.ok(data !== undefined, `${path}: the ConfigMap ${configMap?.name} has no ${key}`);
    const copy = join(dir, `${name}-scope-${key}`);
    await writeFile(copy, data);
    return `${name}=${copy}`;
  });
  return Promise.all(copies);
}

/**
 * The kubelet's part for the Secret a gateway issues a function service's certificate into: its
 * tls.crt and tls.key written to `dir` once it is there; `args` (the service's) then read them there.
 */
export async function withMountedCertificate(
  args: string[],
  secret: { namespace: string; name: string },
  dir: string,
): Promise<{ args: string[]; mount(): Promise<void> }> {
  const files = { '--tls-cert': join(dir, 'tls.crt'), '--tls-key': join(dir, 'tls.key') };
  const mount = async () => {
    const client = await kubeClient();
    const data = await eventually(`the Secret ${secret.namespace}/${secret.name}`, async () => {
      const read = await client
        .get<{ data?: Record<string, string> }>(
          `/api/v1/namespaces/${secret.namespace}/secrets/${secret.name}`,
        )
        .catch(() => undefined);
      return read?.data?.['tls.crt'] && read.data['tls.key'] ? read.data : undefined;
    });
    await writeFile(files['--tls-key'], Buffer.from(data['tls.key'] as string, 'base64'));
    await writeFile(files['--tls-cert'], Buffer.from(data['tls.crt'] as string, 'base64'));
  };
  return {
    args: withFlag(withFlag(args, '--tls-cert', files['--tls-cert']), '--tls-key', files['--tls-key']),
    mount,
  };
}

export type BundledCli = ChildProcess & { output(): string };

/** What a Dockerfile's last stage runs: its ENTRYPOINT, and the environment its ENV lines set. */
export function imageOf(dockerfile: string): { entrypoint: string[]; env: Record<string, string> } {
  const stage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  const entrypoint = JSON.parse(/^ENTRYPOINT (.+)$/m.exec(stage)?.[1] ?? '[]') as string[];
  const env: Record<string, string> = {};
  for (const [, line] of stage.matchAll(/^ENV (.+)$/gm)) {
    for (const [, key, value] of (line as string).matchAll(/(\w+)=(\S+)/g))
      env[key as string] = value as string;
  }
  return { entrypoint, env };
}

/** Starts `node <bundled CLI> <args>` — the image's entrypoint — in `cwd`, and stops it after `t`. */
export function startBundledCli(
  t: TestContext,
  cli: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd = REPO,
): BundledCli {
  const child = spawn(process.execPath, [cli, ...args], {
    cwd,
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    }
  });
  return Object.assign(child, { output: () => output });
}

/**
 * Starts the two containers' commands in the order a cluster does, the function service's
 * `--jwks-file` pointing at a file under `dir`. The gateway starts first, holding nothing but what
 * `env` gives it (its service account's kubeconfig): it makes its signing keys and publishes their
 * public halves in the ConfigMap its --signing-keys names, then waits for the service at the URL of
 * its --functions (or of a FunctionService). The service's pod waits for that ConfigMap to mount it:
 * this test plays kubelet's part, writing the ConfigMap's jwks.json to the file, then starts the
 * service with no secret at all, once `beforeFunctions` (what the test sees meanwhile) has resolved.
 */
export async function startGatewayThenFunctions(
  t: TestContext,
  options: {
    cli: string;
    cwd?: string;
    gateway: { args: string[]; env: NodeJS.ProcessEnv };
    functions: { args: string[] };
    dir: string;
    beforeFunctions?: (gateway: BundledCli) => Promise<unknown>;
  },
): Promise<{ gateway: BundledCli; functions: BundledCli; published: PublishedKeys }> {
  const { cli, cwd, dir } = options;
  const [namespace, name] = (flagValue(options.gateway.args, '--signing-keys') ?? '').split('/');
  assert.ok(namespace && name, `--signing-keys <namespace>/<name> among ${options.gateway.args.join(' ')}`);
  const gateway = startBundledCli(t, cli, options.gateway.args, options.gateway.env, cwd);
  const jwks = await eventually('the gateway to publish its public keys', async () => {
    assert.equal(gateway.exitCode, null, 'the gateway exited');
    return readPublishedKeys({ namespace, name });
  }).catch((error) => assert.fail(`${error.message}\n${gateway.output()}`));
  const file = join(dir, 'jwks.json');
  await writeFile(file, jwks);
  await options.beforeFunctions?.(gateway);
  const functions = startBundledCli(t, cli, withFlag(options.functions.args, '--jwks-file', file), {}, cwd);
  return { gateway, functions, published: JSON.parse(jwks) as PublishedKeys };
}

export interface PublishedKeys {
  keys: Array<{ kid: string; [field: string]: unknown }>;
}

/** What the gateway's Secret holds: its private keys, one `kid` each. */
export async function keptKeys(namespace: string, name: string): Promise<string[]> {
  const client = await kubeClient();
  const secret = await client.get<{ data: Record<string, string> }>(
    `/api/v1/namespaces/${namespace}/secrets/${name}`,
  );
  assert.deepEqual(Object.keys(secret.data), ['keys.json'], `Secret ${name}: its keys only`);
  const keys = JSON.parse(Buffer.from(secret.data['keys.json'] ?? '', 'base64').toString()) as Array<{
    kid: string;
  }>;
  return keys.map((key) => key.kid);
}

/** The gateway waiting for its function service, of --functions or of a FunctionService. */
const WAITING_FOR_SERVICE =
  /WARNING +(function service \S+ is not reachable yet|FunctionService \S+ is not served yet: .*ECONNREFUSED)/;

/**
 * The lines of a command's output that report a problem (errors, warnings, refusals by the API), but
 * the gateway's waiting for its function service: in a cluster too, the service starts after it.
 */
export function problems(output: string): string[] {
  return output
    .split('\n')
    .filter((line) => /\b(ERROR|WARNING)\b|[Ff]orbidden/.test(line))
    .filter((line) => !WAITING_FOR_SERVICE.test(line));
}

/**
 * The object at `path` once the deployed gateway has stored its create_fn result, both processes
 * running all along, and the gateway refused nothing (a missing permission fails at once).
 */
export async function handledByDeployed(
  gateway: BundledCli,
  functions: BundledCli,
  path: string,
): Promise<KubernetesObject> {
  const client = await kubeClient();
  return eventually(
    'status.create_fn',
    async () => {
      assert.equal(gateway.exitCode, null, gateway.output());
      assert.equal(functions.exitCode, null, functions.output());
      assert.doesNotMatch(gateway.output(), /[Ff]orbidden/, gateway.output());
      const object = await client.get<KubernetesObject>(path);
      return object.status?.create_fn === undefined ? undefined : object;
    },
    30_000, // the gateway retries the service at growing intervals until the keys are mounted
  );
}
