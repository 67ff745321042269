/** What the tests of deploy/'s overlays share: rendering, finding objects, and running the bundled CLI as the image does. */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { IMAGE_NODE_FLAGS } from '../../deploy/build.ts';
import { applyRbac, CLUSTER_SCOPED, kubectlOk, type Manifest, parseYaml } from './kubectl.ts';

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

export interface Container {
  name: string;
  image: string;
  args?: string[];
  env?: EnvVar[];
  ports?: Array<{ name?: string; containerPort: number }>;
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: SecurityContext;
}

export interface PodSpec {
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  securityContext?: SecurityContext;
  containers: Container[];
}

export interface Deployment extends Manifest {
  spec: {
    replicas?: number;
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

/** `kubectl kustomize` of an overlay, or of a throwaway overlay on top of it that sets `namespace`. */
export async function render(overlay: string, namespace?: string): Promise<Manifest[]> {
  if (namespace === undefined) return parseYaml(await kubectlOk(['kustomize', overlay]));
  const dir = await mkdtemp(join(tmpdir(), 'causeway-deploy-'));
  try {
    // kustomize refuses absolute paths to other kustomizations, not relative ones outside the root.
    const kustomization = {
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      namespace,
      resources: [relative(dir, overlay)],
    };
    await writeFile(join(dir, 'kustomization.yaml'), JSON.stringify(kustomization));
    return parseYaml(await kubectlOk(['kustomize', dir]));
  } finally {
    await rm(dir, { recursive: true, force: true });
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

/** Applies the service accounts and the RBAC of the overlay for real in `namespace`. */
export async function installRbac(t: TestContext, overlay: string, namespace: string): Promise<void> {
  await applyRbac(t, uniqueClusterNames(await render(overlay, namespace), namespace));
}

/** Starts `node <bundled CLI> <args>` — the image's entrypoint — and stops it after `t`. */

export function startBundledCli(
  t: TestContext,
  cli: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): ChildProcess & { output(): string } {
  const child = spawn(process.execPath, [...IMAGE_NODE_FLAGS, cli, ...args], {
    cwd: REPO,
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
