/**
 * `causeway rbac` on every kind of example, on the real apiserver: children of another kind, events,
 * timers, admission webhooks, handlers by category, FunctionService objects. The RBAC it prints for a
 * gateway serving the example, applied, is all that gateway needs: run as a process holding only that
 * ServiceAccount's token, it does the example's whole job as a user sees it, and is refused nothing on
 * the way. Each rule the example alone needs is needed: without it, the apiserver refuses the gateway.
 * (The rules every gateway of KopfExamples has, on kopfexamples, their status and Leases, are proven
 * needed in rbac.test.ts.)
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { stringify } from 'yaml';
import { applyManifests } from '../../gateway/kube/apply.ts';
import { ignoreNotFound } from '../../gateway/kube/errors.ts';
import {
  functionServiceDefinition,
  functionServicesPath,
} from '../../gateway/services/function-service-objects.ts';
import type { KubernetesObject, ServiceScope } from '../../protocol/index.ts';
import { testNamespace, webhookClientCa } from '../support/cluster.ts';
import { customResourceDefinition, type TestKind, uniqueGroup } from '../support/crds.ts';
import { exampleFile } from '../support/examples.ts';
import {
  applyRbac,
  kubectl,
  type Manifest,
  type PolicyRule,
  writeServiceAccountKubeconfig,
} from '../support/kubectl.ts';
import {
  applyFile,
  createFunctionService,
  createKopfExample,
  eventually,
  kubeClient,
  statusOnceThere,
} from '../support/operator.ts';
import { type CliProcess, causeway, serveOnLoopback } from '../support/processes.ts';
import { rbacObjects, refusal, withoutRule, withoutSecret } from '../support/rbac.ts';

const KOPFEXAMPLE_CRD = exampleFile('01-minimal', 'crd.yaml');
const KOPFEXAMPLES = 'kopfexamples.kopf.dev';
const SECRET = 'a-secret-shared-by-the-gateway-and-its-service-0123456789';
const ACCOUNT = 'causeway-gateway';

/** What a gateway serving an example is given, and what a user does and sees of its job. */
interface Serving {
  /** Given both to `causeway rbac` and to the gateway: what it serves, how it signs, its identity. */
  flags: string[];
  /** Given to the gateway alone (`causeway rbac` has no use for them). */
  gatewayFlags?: string[];
  /** What a user does once the gateway runs: what it then does its job on, or is refused on the way. */
  use?(): Promise<void>;
  /** The whole job done, as a user sees it, while the gateway runs. */
  done(gateway: CliProcess): Promise<void>;
  /** What is left once the gateway stopped. */
  stopped?(): Promise<void>;
}

/** A rule of the example's own, and what the apiserver refuses the gateway without it. */
interface Removal {
  /** Which rule, for the test's title. */
  rule: string;
  kind: 'Role' | 'ClusterRole';
  matches(rule: PolicyRule): boolean;
  refused: RegExp;
}

interface Example {
  name: string;
  /** Starts the example's function service for a gateway serving `namespace`, and what it needs there. */
  serve(t: TestContext, namespace: string, directory: string): Promise<Serving>;
  removals: Removal[];
}

const on = (resource: string) => (rule: PolicyRule) => rule.resources?.includes(resource) ?? false;
const named = (resource: string) => (rule: PolicyRule) => on(resource)(rule) && !!rule.resourceNames;
const created = (resource: string) => (rule: PolicyRule) =>
  on(resource)(rule) && !rule.resourceNames && rule.verbs.includes('create');

/**
 * `causeway serve <module>` on loopback, verifying with the secret it shares with the gateway: its URL,
 * and the flags that tell a gateway (and `causeway rbac`) to serve it, pinned `scope`.
 */
async function service(
  t: TestContext,
  directory: string,
  options: { module: string; name: string; scope: ServiceScope; env?: NodeJS.ProcessEnv },
): Promise<{ url: string; flags: string[] }> {
  const secretFile = join(directory, 'secret');
  writeFileSync(secretFile, SECRET);
  const scopeFile = join(directory, `${options.name}-scope.yaml`);
  writeFileSync(scopeFile, stringify(options.scope));
  const { url } = await serveOnLoopback(t, options.module, ['--secret-file', secretFile], {
    ...withoutSecret,
    ...options.env,
  });
  const flags = [
    ...['--functions', `${options.name}=${url}`, '--function-scope', `${options.name}=${scopeFile}`],
    ...['--secret-file', secretFile],
  ];
  return { url, flags };
}

const kopfExamplePath = (namespace: string, name: string) =>
  `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/${name}`;

const readOrGone = async (path: string) => ignoreNotFound((await kubeClient()).get<KubernetesObject>(path));

const children: Example = {
  name: 'examples/02-children',
  async serve(t, namespace, directory) {
    await applyFile(KOPFEXAMPLE_CRD);
    const path = kopfExamplePath(namespace, 'kopf-example-2');
    return {
      flags: (
        await service(t, directory, {
          module: 'examples/02-children/operator.ts',
          name: 'children',
          scope: { resources: [KOPFEXAMPLES], children: ['pods'] },
        })
      ).flags,
      use: async () => {
        await applyFile(exampleFile('02-children', 'object.yaml'), namespace);
      },
      async done() {
        assert.deepEqual(await statusOnceThere(path, 'create_fn'), { 'pod-name': 'kopf-example-2-pod' });
        const client = await kubeClient();
        const parent = await client.get<KubernetesObject>(path);
        const pod = await client.get<KubernetesObject>(
          `/api/v1/namespaces/${namespace}/pods/kopf-example-2-pod`,
        );
        const owners = pod.metadata.ownerReferences as Array<{ kind: string; uid: string }>;
        assert.deepEqual(
          owners.map(({ kind, uid }) => ({ kind, uid })),
          [{ kind: 'KopfExample', uid: parent.metadata.uid }],
        );
      },
    };
  },
  removals: [{ rule: 'pods', kind: 'Role', matches: on('pods'), refused: refusal('get', 'pods') }],
};

interface EventSummary {
  type: string;
  reason: string;
  message: string;
}

const events: Example = {
  name: 'examples/04-events',
  async serve(t, namespace, directory) {
    await applyFile(KOPFEXAMPLE_CRD);
    return {
      flags: (
        await service(t, directory, {
          module: 'examples/04-events/operator.ts',
          name: 'events',
          scope: { resources: [KOPFEXAMPLES] },
        })
      ).flags,
      use: async () => {
        await applyFile(exampleFile('04-events', 'object.yaml'), namespace);
      },
      async done() {
        const client = await kubeClient();
        const posted = await eventually(
          'three events about kopf-example-1',
          async () => {
            const { items } = await client.get<{ items: EventSummary[] }>(
              `/api/v1/namespaces/${namespace}/events`,
              { fieldSelector: 'involvedObject.name=kopf-example-1' },
            );
            return items.length >= 3
              ? items.map(({ type, reason, message }) => ({ type, reason, message }))
              : undefined;
          },
          30_000,
        );
        assert.deepEqual(
          posted.sort((a, b) => a.reason.localeCompare(b.reason)),
          [
            {
              type: 'Warning',
              reason: 'BadDuration',
              message: 'kopf-example-1: "half an hour" is not a duration such as 30s, 1m or 2h',
            },
            { type: 'Normal', reason: 'Greeting', message: 'hello kopf-example-1' },
            { type: 'Normal', reason: 'Note', message: 'a short note' },
          ],
        );
      },
    };
  },
  removals: [{ rule: 'events', kind: 'Role', matches: on('events'), refused: refusal('create', 'events') }],
};

const timers: Example = {
  name: 'examples/15-timers',
  async serve(t, namespace, directory) {
    await applyFile(KOPFEXAMPLE_CRD);
    return {
      flags: (
        await service(t, directory, {
          module: 'examples/15-timers/operator.ts',
          name: 'timers',
          scope: { resources: [KOPFEXAMPLES] },
        })
      ).flags,
      use: async () => {
        await applyFile(exampleFile('01-minimal', 'object.yaml'), namespace);
      },
      async done(gateway) {
        const path = kopfExamplePath(namespace, 'kopf-example-1');
        // The async timer's result, once the object has been idle for 4 s; the sync one's log line.
        assert.deepEqual(await statusOnceThere(path, 'every_few_seconds_async', 30_000), { field: 'value' });
        await gateway.waitFor(/ping from a sync timer: field=\\?"value\\?"/, 30_000);
      },
    };
  },
  // A timer needs only what every gateway of KopfExamples has.
  removals: [],
};

const WEBHOOK_CONFIGURATIONS = '(?:validating|mutating)webhookconfigurations';
const admission: Example = {
  name: 'examples/17-admission',
  async serve(t, namespace, directory) {
    await applyFile(KOPFEXAMPLE_CRD);
    // Webhook configurations of its own: other tests configure theirs at the same time.
    const prefix = `${namespace}.causeway.dev`;
    const configurations = ['validating', 'mutating'].map(
      (type) => `/apis/admissionregistration.k8s.io/v1/${type}webhookconfigurations/${prefix}`,
    );
    // Left by a gateway refused on its way out.
    t.after(() =>
      kubectl([
        'delete',
        '--ignore-not-found',
        ...['validating', 'mutating'].map((type) => `${type}webhookconfiguration/${prefix}`),
      ]),
    );
    const certificates = `${namespace}/webhook-certificates`;
    const kubectlIn = (args: string[], input?: string) => kubectl([...args, '-n', namespace], input);
    return {
      flags: [
        ...(
          await service(t, directory, {
            module: 'examples/17-admission/operator.ts',
            name: 'admission',
            scope: { resources: [], admission: [KOPFEXAMPLES] },
          })
        ).flags,
        ...['--webhook-certificates', certificates, '--annotation-prefix', prefix],
      ],
      // Reachable on loopback; the test apiserver presents a certificate this CA signed.
      gatewayFlags: [
        '--webhook-listen',
        '127.0.0.1:0',
        '--webhook-client-ca',
        (await webhookClientCa()).path,
      ],
      async done() {
        const probe = JSON.stringify({
          apiVersion: 'kopf.dev/v1',
          kind: 'KopfExample',
          metadata: { name: 'probe' },
          spec: { field: 'not-allowed' },
        });
        // The apiserver takes up new webhook configurations shortly after they are written.
        await eventually(
          'the webhooks in effect',
          async () =>
            (await kubectlIn(['create', '--dry-run=server', '-f', '-'], probe)).code === 0 ? undefined : true,
          30_000,
        );
        const applied = await kubectlIn([
          'apply',
          '-f',
          exampleFile('17-admission', 'objects.yaml').pathname,
        ]);
        assert.match(applied.stdout, /kopfexample.kopf.dev\/kopf-example-1 created/);
        assert.match(applied.stderr, /denied the request: Meh! I don't like it\. Change the field\./);
        assert.match(applied.stderr, /denied the request: I'm too lazy anyway\. Go away!/);
        assert.match(applied.stderr, /Warning: Accessing as user: /);
        const first = await readOrGone(kopfExamplePath(namespace, 'kopf-example-1'));
        assert.equal(first?.spec?.injected, 123, 'mutated');
        for (const refused of ['kopf-example-2', 'kopf-example-3']) {
          assert.equal(
            await readOrGone(kopfExamplePath(namespace, refused)),
            undefined,
            `${refused} refused`,
          );
        }
        // Its certificates kept where it was told, for its restarts and replicas.
        const client = await kubeClient();
        for (const name of ['webhook-certificates', 'webhook-certificates-ca'])
          await client.get(`/api/v1/namespaces/${namespace}/secrets/${name}`);
      },
      // Its webhooks are not persistent: it removes their configurations as it stops.
      async stopped() {
        for (const path of configurations) assert.equal(await readOrGone(path), undefined, `${path} removed`);
      },
    };
  },
  removals: [
    {
      rule: 'webhook configurations, by name',
      kind: 'ClusterRole',
      matches: named('validatingwebhookconfigurations'),
      refused: refusal('patch', WEBHOOK_CONFIGURATIONS),
    },
    {
      rule: 'webhook configurations, to create',
      kind: 'ClusterRole',
      matches: created('validatingwebhookconfigurations'),
      refused: refusal('create', WEBHOOK_CONFIGURATIONS),
    },
    {
      rule: "the certificates' Secrets, by name",
      kind: 'Role',
      matches: named('secrets'),
      refused: refusal('get', 'secrets'),
    },
    {
      rule: 'Secrets, to create',
      kind: 'Role',
      matches: created('secrets'),
      refused: refusal('create', 'secrets'),
    },
  ],
};

/** Two kinds of one category, in two groups. */
function categoryKinds(): { category: string; kinds: [TestKind, TestKind] } {
  const category = `causeway-test-${randomBytes(4).toString('hex')}`;
  const kind = (group: string, name: string): TestKind => ({
    group,
    kind: name,
    plural: `${name.toLowerCase()}s`,
    categories: [category],
  });
  return { category, kinds: [kind(uniqueGroup('rbaca'), 'Alpha'), kind(uniqueGroup('rbacb'), 'Beta')] };
}

const categories: Example = {
  name: 'handlers by category',
  async serve(t, namespace, directory) {
    const client = await kubeClient();
    const { category, kinds } = categoryKinds();
    for (const kind of kinds) {
      await applyManifests(client, [customResourceDefinition(kind)], { fieldManager: 'causeway-tests' });
      t.after(() =>
        client.request(
          `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${kind.plural}.${kind.group}`,
          {
            method: 'DELETE',
          },
        ),
      );
    }
    const pathOf = (kind: TestKind, name = '') =>
      `/apis/${kind.group}/v1/namespaces/${namespace}/${kind.plural}${name ? `/${name}` : ''}`;
    return {
      flags: (
        await service(t, directory, {
          module: 'test/fixtures/category-operator.ts',
          name: 'categories',
          scope: { resources: kinds.map((kind) => `${kind.plural}.${kind.group}`) },
          env: { CAUSEWAY_TEST_CATEGORY: category },
        })
      ).flags,
      use: async () => {
        for (const kind of kinds) {
          await client.request(pathOf(kind), {
            method: 'POST',
            body: { apiVersion: `${kind.group}/v1`, kind: kind.kind, metadata: { name: 'one' }, spec: {} },
          });
        }
      },
      async done() {
        for (const kind of kinds) {
          assert.deepEqual(await statusOnceThere(pathOf(kind, 'one'), 'create_fn'), { kind: kind.kind });
        }
      },
    };
  },
  // Each kind of the category has its rule: alphas and betas, the plurals of categoryKinds.
  removals: ['alphas', 'betas'].map((plural) => ({
    rule: plural,
    kind: 'Role' as const,
    matches: on(plural),
    refused: refusal('list', plural),
  })),
};

const functionServiceObjects: Example = {
  name: 'FunctionService objects',
  async serve(t, namespace, directory) {
    await applyFile(KOPFEXAMPLE_CRD);
    const client = await kubeClient();
    await applyManifests(client, [functionServiceDefinition()], { fieldManager: 'causeway-tests' });
    await client.request(`/api/v1/namespaces/${namespace}/secrets`, {
      method: 'POST',
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'kopfexample-secret' },
        stringData: { secret: SECRET },
      },
    });
    // The gateway is not given the service: it reads it off its FunctionService.
    const { url } = await service(t, directory, {
      module: 'examples/01-minimal/operator.ts',
      name: 'kopfexample',
      scope: { resources: [KOPFEXAMPLES] },
    });
    await createFunctionService(namespace, 'kopfexample', {
      url,
      secretRef: { name: 'kopfexample-secret' },
      scope: { resources: [KOPFEXAMPLES] },
    });
    const path = kopfExamplePath(namespace, 'served');
    return {
      flags: ['--function-services', namespace],
      // The service runs on this host.
      gatewayFlags: ['--allow-loopback-functions'],
      use: async () => {
        await createKopfExample(namespace, 'served');
      },
      async done() {
        assert.deepEqual(await statusOnceThere(path, 'create_fn'), { message: 'hello served' });
        const found = await client.get<KubernetesObject>(`${functionServicesPath(namespace)}/kopfexample`);
        assert.equal(found.status?.phase, 'Ready', JSON.stringify(found.status));
      },
    };
  },
  removals: [
    {
      rule: 'functionservices',
      kind: 'Role',
      matches: on('functionservices'),
      refused: refusal('list', 'functionservices'),
    },
    {
      rule: 'functionservices/status',
      kind: 'Role',
      matches: on('functionservices/status'),
      refused: refusal('patch', 'functionservices/status'),
    },
    {
      rule: "the service's shared secret",
      kind: 'Role',
      matches: named('secrets'),
      refused: refusal('get', 'secrets'),
    },
  ],
};

const EXAMPLES = [children, events, timers, admission, categories, functionServiceObjects];

/**
 * A namespace served by the example's gateway, the RBAC `causeway rbac` prints for that gateway (not
 * applied), and how to start it holding only its account's token.
 */
async function generated(t: TestContext, example: Example) {
  const namespace = await testNamespace(t);
  const directory = mkdtempSync(join(tmpdir(), 'causeway-rbac-examples-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  const serving = await example.serve(t, namespace, directory);
  const flags = [...serving.flags, '--namespace', namespace, '--peering-namespace', namespace];
  const objects = await rbacObjects([...flags, '--service-account', `${namespace}/${ACCOUNT}`]);
  return {
    serving,
    objects,
    /**
     * `granted` applied, the gateway started as the account; the one place its arguments are made.
     * Its check at start refuses a rule missing; `warn` lets it run into the apiserver's refusal.
     */
    async startGateway(granted: Manifest[], rbacCheck: 'refuse' | 'warn' = 'refuse'): Promise<CliProcess> {
      await applyRbac(t, granted);
      const kubeconfig = join(directory, 'kubeconfig');
      await writeServiceAccountKubeconfig(kubeconfig, namespace, ACCOUNT);
      const gateway = causeway(
        ['gateway', '--rbac-check', rbacCheck, ...flags, ...(serving.gatewayFlags ?? [])],
        {
          ...withoutSecret,
          KUBECONFIG: kubeconfig,
        },
      );
      t.after(() => gateway.stop());
      return gateway;
    },
  };
}

// The examples are independent, each in a namespace of its own; a few at once, as each runs three
// processes (its service, `causeway rbac`, the gateway).
describe('causeway rbac, on every kind of example', { concurrency: 3 }, () => {
  for (const example of EXAMPLES) {
    it(`grants a gateway of ${example.name} all it needs: holding only its account's token, it does the whole job`, async (t) => {
      const { serving, objects, startGateway } = await generated(t, example);
      const gateway = await startGateway(objects);
      await serving.use?.();
      try {
        await serving.done(gateway);
      } catch (error) {
        throw new Error(`${(error as Error).message}\nThe gateway's log:\n${gateway.output()}`, {
          cause: error,
        });
      }
      assert.equal(await gateway.stop(), 0, gateway.output());
      await serving.stopped?.();
      assert.doesNotMatch(gateway.output(), /[Ff]orbidden/, gateway.output());
    });

    for (const removal of example.removals) {
      it(`prints no rule ${example.name} does not need: without the one on ${removal.rule}, the gateway is refused`, async (t) => {
        const { serving, objects, startGateway } = await generated(t, example);
        const gateway = await startGateway(withoutRule(objects, removal.kind, removal.matches), 'warn');
        await serving.use?.();
        await gateway.waitFor(removal.refused, 30_000);
      });
    }
  }
});
