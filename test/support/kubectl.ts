/**
 * kubectl against the test control plane, for the tests of deployment manifests: rendering and
 * applying them, and probing what a service account may do.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import type { TestContext } from 'node:test';
import { parseAllDocuments, stringify } from 'yaml';
import { testCluster } from './cluster.ts';

const REPO = new URL('../..', import.meta.url).pathname;

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
  nonResourceURLs?: string[];
}

export const CLUSTER_SCOPED = new Set(['ClusterRole', 'ClusterRoleBinding']);
const RBAC_KINDS = new Set(['ServiceAccount', 'Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding']);

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command in the repository with `input` on its stdin (and `env`, else this process's), collecting what it prints. */
export function run(command: string, args: string[], input = '', env?: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise<Run>((resolve, reject) => {
    const child = spawn(command, args, { cwd: REPO, ...(env ? { env } : {}) });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

export async function kubectl(args: string[], input?: string): Promise<Run> {
  const { kubeconfigPath } = await testCluster();
  return run('kubectl', [`--kubeconfig=${kubeconfigPath}`, ...args], input);
}

/** Runs kubectl and fails the test, with what kubectl said, unless it exits 0. */
export async function kubectlOk(args: string[], input?: string): Promise<string> {
  const result = await kubectl(args, input);
  assert.equal(result.code, 0, `kubectl ${args.join(' ')} failed:\n${result.stderr}${result.stdout}`);
  return result.stdout;
}

export function parseYaml(text: string): Manifest[] {
  return parseAllDocuments(text).map((document) => {
    if (document.errors.length > 0) throw document.errors[0];
    return document.toJS() as Manifest;
  });
}

export function toYaml(objects: Manifest[]): string {
  return objects.map((object) => stringify(object)).join('---\n');
}

/** What `kubectl apply --dry-run=server` reports it would apply, as `kind.group/name`, sorted. */
export function dryRunObjects(stdout: string): string[] {
  return stdout
    .trim()
    .split('\n')
    .map((line) => {
      const match = /^(\S+) (?:created|configured|unchanged) \(server dry run\)$/.exec(line);
      assert.ok(match?.[1], `unexpected line from kubectl apply: ${line}`);
      return withoutContentHash(match[1]);
    })
    .sort();
}

/** A generated ConfigMap's name as its kustomization gives it, without the hash of its content kustomize appends. */
export function withoutContentHash(name: string): string {
  return name.replace(/-[bcdfghjklmnpqrstvwxz2456789]{10}$/, '');
}

/** Applies the service accounts and RBAC among `objects` for real; deletes the cluster-scoped ones after `t`. */
export async function applyRbac(t: TestContext, objects: Manifest[]): Promise<void> {
  const rbac = objects.filter((object) => RBAC_KINDS.has(object.kind));
  const clusterScoped = rbac
    .filter((object) => CLUSTER_SCOPED.has(object.kind))
    .map((object) => `${object.kind.toLowerCase()}/${object.metadata.name}`);
  t.after(async () => {
    await kubectl(['delete', '--ignore-not-found', '--wait=false', ...clusterScoped]);
  });
  await kubectlOk(['apply', '--server-side', '--field-manager=causeway-tests', '-f', '-'], toYaml(rbac));
}

export const serviceAccount = (namespace: string, name: string) =>
  `system:serviceaccount:${namespace}:${name}`;

/** Writes to `path` what the kubelet would give a pod of `account`: a token of it, and the API server. */
export async function writeServiceAccountKubeconfig(
  path: string,
  namespace: string,
  account: string,
): Promise<void> {
  const token = (await kubectlOk(['create', 'token', account, `--namespace=${namespace}`])).trim();
  const { server, caPem } = await testCluster();
  await writeFile(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'test', cluster: { server, 'certificate-authority-data': btoa(caPem) } }],
      users: [{ name: account, user: { token } }],
      contexts: [{ name: account, context: { cluster: 'test', user: account, namespace } }],
      'current-context': account,
    }),
    { mode: 0o600 },
  );
}

/** `kubectl auth can-i`: true for yes (exit 0), false for no (exit 1); anything else fails the test. */
async function canI(user: string, namespace: string, args: string[]): Promise<boolean> {
  const result = await kubectl(['auth', 'can-i', `--as=${user}`, `--namespace=${namespace}`, ...args]);
  assert.ok(
    result.code === 0 || result.code === 1,
    `kubectl auth can-i ${args.join(' ')} failed: ${result.stderr}`,
  );
  return result.code === 0;
}

/** Each check that `canI` answers otherwise than expected, said in a line; empty when all hold. */
export async function wrongPermissions(
  expectations: Array<[user: string, namespace: string, args: string[], allowed: boolean]>,
): Promise<string[]> {
  const answers = await Promise.all(expectations.map(([user, ns, args]) => canI(user, ns, args)));
  return expectations
    .filter(([, , , allowed], i) => answers[i] !== allowed)
    .map(
      ([user, ns, args, allowed]) =>
        `${user} in ${ns}: ${args.join(' ')} should be ${allowed ? 'allowed' : 'denied'}`,
    );
}

interface RulesReview {
  status: { resourceRules: PolicyRule[]; nonResourceRules: PolicyRule[] };
}

/** What `user` may do in `namespace`, one string per verb and resource, from a SelfSubjectRulesReview. */
async function permissions(user: string, namespace: string): Promise<Set<string>> {
  const review = {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectRulesReview',
    spec: { namespace },
  };
  const answer = JSON.parse(
    await kubectlOk(
      ['create', '--validate=false', `--as=${user}`, '-o', 'json', '-f', '-'],
      JSON.stringify(review),
    ),
  ) as RulesReview;
  const found = new Set<string>();
  for (const rule of answer.status.resourceRules) {
    for (const group of rule.apiGroups ?? [''])
      for (const resource of rule.resources ?? [])
        for (const verb of rule.verbs)
          found.add(
            `${verb} ${group}/${resource}${rule.resourceNames ? `/${rule.resourceNames.join(',')}` : ''}`,
          );
  }
  for (const rule of answer.status.nonResourceRules) {
    for (const url of rule.nonResourceURLs ?? []) for (const verb of rule.verbs) found.add(`${verb} ${url}`);
  }
  return found;
}

/** What `user` may do in `namespace` beyond what any authenticated account may (one bound to nothing). */
export async function grantedBeyondBaseline(user: string, namespace: string): Promise<string[]> {
  const baseline = await permissions(serviceAccount(namespace, 'bound-to-nothing'), namespace);
  assert.ok(baseline.has('get /api'), 'discovery is open to every authenticated user (system:discovery)');
  const granted = await permissions(user, namespace);
  return [...granted].filter((entry) => !baseline.has(entry)).sort();
}

/** The rules of every object of `kind` among `objects`. */
export const rulesOf = (objects: Manifest[], kind: string) =>
  objects
    .filter((object) => object.kind === kind)
    .flatMap((object) => (object.rules as PolicyRule[] | undefined) ?? []);

/**
 * What rules grant, one `group resource name verb` each, sorted: the same grants compare equal however
 * they are grouped into rules.
 */
export const grants = (rules: PolicyRule[]) =>
  [
    ...new Set(
      rules.flatMap((rule) =>
        (rule.apiGroups ?? []).flatMap((group) =>
          (rule.resources ?? []).flatMap((resource) =>
            (rule.resourceNames ?? ['*']).flatMap((name) =>
              rule.verbs.map((verb) => `${group}/${resource} ${name} ${verb}`),
            ),
          ),
        ),
      ),
    ),
  ].sort();
