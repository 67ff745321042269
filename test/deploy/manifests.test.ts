/**
 * deploy/: the kustomize manifests for examples/01-minimal, checked against the real test control
 * plane — server-side dry run under the restricted pod security standard, the gateway's RBAC applied
 * for real and probed with `kubectl auth can-i`, and the containers' commands run with nothing but
 * the gateway's service account token.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { bundleCli, IMAGE_NODE_FLAGS } from '../../deploy/build.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  type Binding,
  type Deployment,
  find,
  flagValue,
  installRbac,
  onlyContainer,
  REPO,
  render,
  type Service,
  startBundledCli,
  withFlag,
} from '../support/deploy.ts';
import {
  CLUSTER_SCOPED,
  dryRunObjects,
  grantedBeyondBaseline,
  kubectl,
  kubectlOk,
  type PolicyRule,
  serviceAccount,
  toYaml,
  writeServiceAccountKubeconfig,
  wrongPermissions,
} from '../support/kubectl.ts';
import { applyFile, eventually, kubeClient } from '../support/operator.ts';

const OVERLAY = join(REPO, 'deploy/examples/01-minimal');
const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const OBJECT = new URL('../../examples/01-minimal/object.yaml', import.meta.url);
/** The overlay's own namespace. */
const EXAMPLE_NAMESPACE = 'kopfexample';
const GATEWAY = 'causeway-gateway';
const FUNCTIONS = 'kopfexample-functions';
const CLUSTER_RBAC = 'causeway-gateway-kopfexample';
const SECRET = { name: 'causeway-secret', key: 'secret' };

/** Every object the overlay renders, as `kubectl apply` names them. */
const EXPECTED = [
  `serviceaccount/${GATEWAY}`,
  `serviceaccount/${FUNCTIONS}`,
  `role.rbac.authorization.k8s.io/${GATEWAY}`,
  `rolebinding.rbac.authorization.k8s.io/${GATEWAY}`,
  `clusterrole.rbac.authorization.k8s.io/${CLUSTER_RBAC}`,
  `clusterrolebinding.rbac.authorization.k8s.io/${CLUSTER_RBAC}`,
  `deployment.apps/${GATEWAY}`,
  `deployment.apps/${FUNCTIONS}`,
  `service/${FUNCTIONS}`,
].sort();

describe('deploy/examples/01-minimal', () => {
  before(async () => {
    // The Role names kopfexamples.kopf.dev: the resource must exist for the checks to mean anything.
    await applyFile(CRD);
  });

  it('renders with kubectl kustomize: every object, in the overlay namespace, bound to its service account', async () => {
    const objects = await render(OVERLAY);
    assert.deepEqual(
      objects.map((object) => `${object.kind}/${object.metadata.name}`).sort(),
      [
        `ClusterRole/${CLUSTER_RBAC}`,
        `ClusterRoleBinding/${CLUSTER_RBAC}`,
        `Deployment/${FUNCTIONS}`,
        `Deployment/${GATEWAY}`,
        `Role/${GATEWAY}`,
        `RoleBinding/${GATEWAY}`,
        `Service/${FUNCTIONS}`,
        `ServiceAccount/${FUNCTIONS}`,
        `ServiceAccount/${GATEWAY}`,
      ].sort(),
    );
    for (const object of objects) {
      const expected = CLUSTER_SCOPED.has(object.kind) ? undefined : EXAMPLE_NAMESPACE;
      assert.equal(
        object.metadata.namespace,
        expected,
        `namespace of ${object.kind} ${object.metadata.name}`,
      );
    }
    for (const binding of objects.filter((object) => object.kind.endsWith('Binding')) as Binding[]) {
      assert.deepEqual(
        binding.subjects,
        [{ kind: 'ServiceAccount', name: GATEWAY, namespace: EXAMPLE_NAMESPACE }],
        `subjects of ${binding.kind} ${binding.metadata.name}`,
      );
    }
    for (const name of [GATEWAY, FUNCTIONS]) {
      const deployment = find<Deployment>(objects, 'Deployment', name);
      assert.equal(onlyContainer(deployment).image, 'causeway:0.1.0');
      assert.equal(deployment.spec.template.spec.serviceAccountName, name);
      assert.equal(deployment.spec.replicas, 1);
    }
  });

  it('passes kubectl apply --dry-run=server in a namespace that enforces the restricted pod security standard', async (t) => {
    const namespace = await testNamespace(t);
    await kubectlOk([
      'label',
      'namespace',
      namespace,
      'pod-security.kubernetes.io/enforce=restricted',
      'pod-security.kubernetes.io/warn=restricted',
    ]);
    const objects = await render(OVERLAY, namespace);

    const result = await kubectl(['apply', '--dry-run=server', '-f', '-'], toYaml(objects));
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(dryRunObjects(result.stdout), EXPECTED);
    // Pod security admission warns about pod templates that the namespace's pods could not have.
    assert.doesNotMatch(result.stderr, /PodSecurity/, result.stderr);

    // The same check notices a weaker pod template: the absence of the warning above means something.
    const weakened = structuredClone(objects);
    const container = onlyContainer(find<Deployment>(weakened, 'Deployment', FUNCTIONS));
    container.securityContext = { ...container.securityContext, allowPrivilegeEscalation: true };
    const weak = await kubectl(['apply', '--dry-run=server', '-f', '-'], toYaml(weakened));
    assert.equal(weak.code, 0, weak.stderr);
    assert.match(weak.stderr, /would violate PodSecurity "restricted:latest": allowPrivilegeEscalation/);
  });

  it('grants the gateway what it uses and nothing more, and the functions nothing', async (t) => {
    const namespace = await testNamespace(t);
    const elsewhere = await testNamespace(t);
    await installRbac(t, OVERLAY, namespace);
    const gateway = serviceAccount(namespace, GATEWAY);
    const functions = serviceAccount(namespace, FUNCTIONS);
    const kex = 'kopfexamples.kopf.dev';

    const expectations: Array<[user: string, ns: string, args: string[], allowed: boolean]> = [
      // What gateway/gateway.ts does: discovery, list + watch, merge patches, the CRD's schema.
      [gateway, namespace, ['get', '/api'], true],
      [gateway, namespace, ['get', '/apis'], true],
      [gateway, namespace, ['list', kex], true],
      [gateway, namespace, ['watch', kex], true],
      [gateway, namespace, ['get', kex], true],
      [gateway, namespace, ['patch', kex], true],
      [gateway, namespace, ['patch', kex, '--subresource=status'], true],
      [gateway, namespace, ['get', `customresourcedefinitions.apiextensions.k8s.io/${kex}`], true],
      [gateway, namespace, ['create', 'events'], true],
      // Never more than that.
      [gateway, namespace, ['create', kex], false],
      [gateway, namespace, ['update', kex], false],
      [gateway, namespace, ['delete', kex], false],
      [gateway, namespace, ['deletecollection', kex], false],
      [gateway, namespace, ['update', kex, '--subresource=status'], false],
      [gateway, namespace, ['get', kex, '--subresource=status'], false],
      [gateway, namespace, ['get', 'secrets'], false],
      [gateway, namespace, ['list', 'secrets'], false],
      [gateway, namespace, ['list', 'pods'], false],
      [gateway, namespace, ['update', 'events'], false],
      [gateway, namespace, ['list', 'events'], false],
      [gateway, elsewhere, ['create', 'events'], false],
      [gateway, elsewhere, ['list', kex], false],
      [gateway, elsewhere, ['patch', kex], false],
      [gateway, namespace, ['list', kex, '--all-namespaces'], false],
      [gateway, namespace, ['list', 'customresourcedefinitions.apiextensions.k8s.io'], false],
      [
        gateway,
        namespace,
        ['get', 'customresourcedefinitions.apiextensions.k8s.io/widgets.example.com'],
        false,
      ],
      [gateway, namespace, ['patch', `customresourcedefinitions.apiextensions.k8s.io/${kex}`], false],
      // The function service has no cluster credentials, and no permissions either.
      [functions, namespace, ['list', kex], false],
      [functions, namespace, ['patch', kex], false],
      [functions, namespace, ['get', 'pods'], false],
      [functions, namespace, ['get', 'secrets'], false],
      [functions, namespace, ['get', `customresourcedefinitions.apiextensions.k8s.io/${kex}`], false],
    ];
    assert.deepEqual(await wrongPermissions(expectations), []);

    // The complete list, beyond what any authenticated account may do (an account bound to nothing).
    assert.deepEqual(await grantedBeyondBaseline(gateway, namespace), [
      'create /events',
      'get apiextensions.k8s.io/customresourcedefinitions/kopfexamples.kopf.dev',
      'get kopf.dev/kopfexamples',
      'list kopf.dev/kopfexamples',
      'patch kopf.dev/kopfexamples',
      'patch kopf.dev/kopfexamples/status',
      'watch kopf.dev/kopfexamples',
    ]);
    assert.deepEqual(await grantedBeyondBaseline(functions, namespace), []);
  });

  it('keeps the hardened defaults in every container and mounts no token into the functions', async () => {
    const objects = await render(OVERLAY);
    for (const name of [GATEWAY, FUNCTIONS]) {
      const pod = find<Deployment>(objects, 'Deployment', name).spec.template.spec;
      const container = onlyContainer(find<Deployment>(objects, 'Deployment', name));
      // A container's own securityContext wins over the pod's.
      const effective = { ...pod.securityContext, ...container.securityContext };
      const where = `${name}/${container.name}`;
      assert.equal(effective.runAsNonRoot, true, `${where}: runAsNonRoot`);
      assert.ok((effective.runAsUser ?? 1000) > 0, `${where}: runAsUser`);
      assert.equal(effective.readOnlyRootFilesystem, true, `${where}: readOnlyRootFilesystem`);
      assert.equal(effective.allowPrivilegeEscalation, false, `${where}: allowPrivilegeEscalation`);
      assert.deepEqual(effective.capabilities, { drop: ['ALL'] }, `${where}: capabilities`);
      assert.equal(effective.seccompProfile?.type, 'RuntimeDefault', `${where}: seccompProfile`);
      for (const part of ['requests', 'limits'] as const) {
        assert.ok(container.resources?.[part]?.cpu, `${where}: resources.${part}.cpu`);
        assert.ok(container.resources?.[part]?.memory, `${where}: resources.${part}.memory`);
      }
      // The shared secret comes from the Secret that deploy/README.md has users create.
      const secret = container.env?.find((variable) => variable.name === 'CAUSEWAY_SECRET');
      assert.deepEqual(secret?.valueFrom?.secretKeyRef, SECRET, `${where}: CAUSEWAY_SECRET`);
    }

    const functionsPod = find<Deployment>(objects, 'Deployment', FUNCTIONS).spec.template.spec;
    assert.equal(functionsPod.automountServiceAccountToken, false);
    assert.equal(find(objects, 'ServiceAccount', FUNCTIONS).automountServiceAccountToken, false);
    const gatewayPod = find<Deployment>(objects, 'Deployment', GATEWAY).spec.template.spec;
    assert.equal(gatewayPod.automountServiceAccountToken, true);

    // Only the gateway's account is bound to anything; no rule has a wildcard, and the only writes are
    // patches, and creating events.
    const bindings = objects.filter((object) => object.kind.endsWith('Binding')) as Binding[];
    assert.deepEqual(
      [...new Set(bindings.flatMap((binding) => binding.subjects.map((s) => s.name)))],
      [GATEWAY],
    );
    const rules = objects.flatMap((object) => (object.rules as PolicyRule[] | undefined) ?? []);
    assert.ok(rules.length > 0);
    for (const rule of rules) {
      const fields = [...rule.verbs, ...(rule.resources ?? []), ...(rule.apiGroups ?? [])];
      assert.ok(!fields.includes('*'), `wildcard in ${JSON.stringify(rule)}`);
      const writes = rule.resources?.includes('events') ? ['create'] : ['patch'];
      assert.deepEqual(
        rule.verbs.filter((verb) => !['get', 'list', 'watch', ...writes].includes(verb)),
        [],
        `verbs of ${JSON.stringify(rule)}`,
      );
    }
  });

  it('wires the gateway to the function service and its namespace, and probes the health check', async () => {
    const objects = await render(OVERLAY);
    const gateway = onlyContainer(find<Deployment>(objects, 'Deployment', GATEWAY));
    const args = gateway.args ?? [];
    assert.equal(args[0], 'gateway');
    assert.equal(args.includes('--all-namespaces'), false);
    assert.equal(flagValue(args, '--namespace'), '$(POD_NAMESPACE)');
    assert.deepEqual(gateway.env?.find((variable) => variable.name === 'POD_NAMESPACE')?.valueFrom, {
      fieldRef: { fieldPath: 'metadata.namespace' },
    });

    // --functions pins the example's name, and names the Service, on a port of it that leads to the
    // functions' serving port.
    const [name, target] = (flagValue(args, '--functions') ?? '').split('=');
    assert.equal(name, 'kopfexample');
    const url = new URL(target ?? '');
    const service = find<Service>(objects, 'Service', url.hostname);
    const servicePort = service.spec.ports.find((port) => port.port === Number(url.port));
    assert.ok(servicePort, `Service ${url.hostname} has no port ${url.port}`);
    const deployment = find<Deployment>(objects, 'Deployment', FUNCTIONS);
    for (const [label, value] of Object.entries(service.spec.selector)) {
      assert.equal(deployment.spec.template.metadata.labels[label], value, `pod label ${label}`);
    }
    const functions = onlyContainer(deployment);
    const containerPort = functions.ports?.find(
      (port) => port.name === servicePort.targetPort || port.containerPort === servicePort.targetPort,
    );
    assert.ok(containerPort, `no container port for targetPort ${servicePort.targetPort}`);
    assert.equal(flagValue(functions.args ?? [], '--port'), String(containerPort.containerPort));
    for (const probe of [functions.readinessProbe, functions.livenessProbe]) {
      assert.equal(probe?.httpGet?.path, '/healthz');
      assert.ok([containerPort.name, containerPort.containerPort].includes(probe?.httpGet?.port));
    }
  });

  it("runs the containers' commands: the function service, and a gateway holding only its service account's token", async (t) => {
    const namespace = await testNamespace(t);
    await installRbac(t, OVERLAY, namespace);
    const objects = await render(OVERLAY, namespace);
    const secret = 'a-shared-secret-for-this-test-that-is-long-enough';
    // The image starts the bundled CLI with the container's args, as below.
    const dockerfile = await readFile(join(REPO, 'deploy/Dockerfile'), 'utf8');
    const entrypoint = /^ENTRYPOINT (.+)$/m.exec(dockerfile)?.[1] ?? '';
    assert.deepEqual(JSON.parse(entrypoint), ['node', ...IMAGE_NODE_FLAGS, 'dist/cli/causeway.mjs']);

    const dir = await mkdtemp(join(tmpdir(), 'causeway-deploy-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const cli = await bundleCli(join(dir, 'cli'));
    // What the kubelet would give the gateway: a token of its service account, and the API server.
    const kubeconfig = join(dir, 'kubeconfig');
    await writeServiceAccountKubeconfig(kubeconfig, namespace, GATEWAY);

    // The functions container's arguments, on a free loopback port instead of 0.0.0.0:8080.
    const functionsArgs = onlyContainer(find<Deployment>(objects, 'Deployment', FUNCTIONS)).args ?? [];
    const functions = startBundledCli(
      t,
      cli,
      [...withFlag(functionsArgs, '--port', '0'), '--host', '127.0.0.1'],
      {
        CAUSEWAY_SECRET: secret,
      },
    );
    const url = await eventually('the function service to listen', async () => {
      assert.equal(functions.exitCode, null, functions.output());
      return /listening on (http:\/\/\S+)/.exec(functions.output())?.[1];
    });

    // The gateway container's arguments, expanded as the kubelet would, calling that service.
    const gatewayContainer = onlyContainer(find<Deployment>(objects, 'Deployment', GATEWAY));
    const gatewayArgs = withFlag(gatewayContainer.args ?? [], '--functions', `kopfexample=${url}`).map(
      (arg) => (arg === '$(POD_NAMESPACE)' ? namespace : arg),
    );
    const gateway = startBundledCli(t, cli, gatewayArgs, { CAUSEWAY_SECRET: secret, KUBECONFIG: kubeconfig });

    const [example] = await applyFile(OBJECT, namespace);
    assert.ok(example);
    const client = await kubeClient();
    const path = `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/${example.metadata.name}`;
    const handled = await eventually('status.create_fn', async () => {
      assert.equal(gateway.exitCode, null, gateway.output());
      assert.doesNotMatch(gateway.output(), /[Ff]orbidden/, gateway.output()); // fail fast on a missing permission
      const object = await client.get<KubernetesObject>(path);
      return object.status?.create_fn === undefined ? undefined : object;
    });
    assert.deepEqual(handled.status?.create_fn, { message: `hello ${example.metadata.name}` });
    assert.match(
      gateway.output(),
      new RegExp(`watching /apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`),
    );
    assert.doesNotMatch(gateway.output(), /\b(ERROR|WARNING)\b|[Ff]orbidden/, gateway.output());
  });
});
