/**
 * deploy/examples/17-admission: a gateway serving admission webhooks, checked against the real test
 * control plane. Its RBAC is exactly what it uses: the containers' commands run with nothing but the
 * gateway's service account token, make the signing keys the function service verifies with, keep
 * the certificates in their Secret, configure the webhooks that the apiserver then calls, and remove
 * them on exit. The apiserver calls them through the Service the configurations name, as in a
 * cluster; the test control plane routes no ClusterIP (no nodes, no kube-proxy), so that Service is
 * an ExternalName of localhost, which kube-apiserver dials at the webhook's port (see
 * test/e2e/admission-service.test.ts): the Service's port and the listen address are the flags changed.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { bundleCli } from '../../deploy/build.ts';
import { ApiError } from '../../gateway/kube/errors.ts';
import {
  type Deployment,
  find,
  flagValue,
  inNamespace,
  keptKeys,
  LAYOUT,
  mountedFile,
  onlyContainer,
  problems,
  REPO,
  render,
  type Service,
  servedOnLoopback,
  startGatewayThenFunctions,
  testPlacement,
  uniqueClusterNames,
  withFlag,
  withFreeLiveness,
  withMountedCertificate,
  withMountedScopes,
} from '../support/deploy.ts';
import {
  applyRbac,
  CLUSTER_SCOPED,
  dryRunObjects,
  grantedBeyondBaseline,
  kubectl,
  kubectlOk,
  type Manifest,
  type PolicyRule,
  serviceAccount,
  toYaml,
  withoutContentHash,
  writeServiceAccountKubeconfig,
  wrongPermissions,
} from '../support/kubectl.ts';
import { applyFile, eventually, kubeClient } from '../support/operator.ts';
import { freePort } from '../support/processes.ts';

const OVERLAY = join(REPO, 'deploy/examples/17-admission');
const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const GATEWAY = 'causeway-gateway';
const FUNCTIONS = 'kopfexample-functions';
const WEBHOOKS = 'causeway-gateway-webhooks';
const CERTIFICATES = 'causeway-gateway-webhooks-tls';
/** The Secret (private) and the ConfigMap (public) of the gateway's signing keys. */
const KEYS = 'causeway-signing-keys';
/** The Secrets of the function service's TLS: the gateway's CA, and the certificate it issues the service. */
const FUNCTION_CA = 'causeway-function-ca';
const FUNCTION_TLS = 'kopfexample-functions-tls';

interface NetworkPolicy extends Manifest {
  spec: {
    podSelector: { matchLabels: Record<string, string> };
    policyTypes: string[];
    ingress: Array<{ ports: Array<{ port: string | number; protocol: string }> }>;
  };
}

/**
 * The webhook configurations are named by the gateway's annotation prefix, cluster-wide: each test
 * gives its gateway a prefix of its own, and the ClusterRole's resourceNames follow it.
 */
function withPrefix(objects: Manifest[], prefix: string): Manifest[] {
  return objects.map((object) => {
    if (object.kind !== 'ClusterRole') return object;
    const copy = structuredClone(object);
    for (const rule of copy.rules as PolicyRule[]) {
      rule.resourceNames = rule.resourceNames?.map((name) => (name === 'causeway.dev' ? prefix : name));
    }
    return copy;
  });
}

describe('deploy/examples/17-admission', () => {
  before(() => applyFile(CRD));

  it('renders the webhook Service for the gateway, and the gateway names it, its port, its Secret and its signing keys', async () => {
    const objects = await render(OVERLAY);
    assert.deepEqual(
      objects.map((object) => `${object.kind}/${withoutContentHash(object.metadata.name)}`).sort(),
      [
        'ClusterRole/causeway-gateway-admission',
        'ClusterRoleBinding/causeway-gateway-admission',
        'ConfigMap/causeway-function-scopes', // the scope pinned for each function service
        `Deployment/${FUNCTIONS}`,
        `Deployment/${GATEWAY}`,
        `NetworkPolicy/${WEBHOOKS}`,
        `PodDisruptionBudget/${GATEWAY}`,
        `Role/${GATEWAY}`,
        `RoleBinding/${GATEWAY}`,
        `Service/${WEBHOOKS}`,
        `Service/${FUNCTIONS}`,
        `ServiceAccount/${FUNCTIONS}`,
        `ServiceAccount/${GATEWAY}`,
      ].sort(),
    );
    const gateway = find<Deployment>(objects, 'Deployment', GATEWAY);
    const container = onlyContainer(gateway);
    const args = container.args ?? [];
    assert.equal(flagValue(args, '--webhook-service'), `$(POD_NAMESPACE)/${WEBHOOKS}:443`);
    // It reviews the example's objects, not its own namespace's, which it serves to no function service.
    assert.equal(flagValue(args, '--namespace'), LAYOUT.objects);
    assert.equal(args.includes('--serve-own-namespace'), false);
    for (const object of objects) {
      const expected = CLUSTER_SCOPED.has(object.kind) ? undefined : LAYOUT.gateway;
      assert.equal(
        object.metadata.namespace,
        expected,
        `namespace of ${object.kind} ${object.metadata.name}`,
      );
    }
    assert.equal(flagValue(args, '--webhook-certificates'), `$(POD_NAMESPACE)/${CERTIFICATES}`);
    const service = find<Service>(objects, 'Service', WEBHOOKS);
    const [port] = service.spec.ports;
    assert.equal(port?.port, 443);
    const target = container.ports?.find((each) => each.name === port?.targetPort);
    assert.equal(`0.0.0.0:${target?.containerPort}`, flagValue(args, '--webhook-listen'));
    for (const [label, value] of Object.entries(service.spec.selector)) {
      assert.equal(gateway.spec.template.metadata.labels[label], value, `pod label ${label}`);
    }
    // The gateway pod admits connections to its webhook port only (the kubelet's probes come from its node).
    const policy = find<NetworkPolicy>(objects, 'NetworkPolicy', WEBHOOKS);
    for (const [label, value] of Object.entries(policy.spec.podSelector.matchLabels)) {
      assert.equal(gateway.spec.template.metadata.labels[label], value, `pod label ${label}`);
    }
    assert.deepEqual(policy.spec.policyTypes, ['Ingress']);
    assert.deepEqual(
      policy.spec.ingress.map((rule) => rule.ports),
      [[{ port: port?.targetPort, protocol: 'TCP' }]],
    );
    const functions = find<Deployment>(objects, 'Deployment', FUNCTIONS);
    const functionsArgs = onlyContainer(functions).args ?? [];
    assert.equal(functionsArgs[1], 'examples/17-admission/operator.ts');
    // The overlay's args replace the base's: they still sign with the keys the service mounts, and
    // serve the liveness endpoint the base's probes ask, readiness beside it.
    assert.equal(flagValue(args, '--signing-keys'), `$(POD_NAMESPACE)/${KEYS}`);
    const liveness = new URL(flagValue(args, '--liveness') ?? '');
    const livenessPort = container.ports?.find((each) => each.containerPort === Number(liveness.port));
    assert.equal(container.livenessProbe?.httpGet?.port, livenessPort?.name);
    assert.equal(container.livenessProbe?.httpGet?.path, liveness.pathname);
    assert.deepEqual(container.readinessProbe?.httpGet, { path: '/readyz', port: livenessPort?.name });
    assert.deepEqual(mountedFile(functions, flagValue(functionsArgs, '--jwks-file') ?? ''), {
      configMap: { name: KEYS },
      key: 'jwks.json',
      readOnly: true,
    });
  });

  it('passes kubectl apply --dry-run=server under the restricted pod security standard', async (t) => {
    const placement = await testPlacement(t);
    const namespace = placement.gateway;
    await kubectlOk(['label', 'namespace', namespace, 'pod-security.kubernetes.io/enforce=restricted']);
    const objects = uniqueClusterNames(await render(OVERLAY, placement), namespace);
    const result = await kubectl(['apply', '--dry-run=server', '-f', '-'], toYaml(objects));
    assert.equal(result.code, 0, result.stderr);
    assert.equal(dryRunObjects(result.stdout).length, objects.length);
    assert.doesNotMatch(result.stderr, /PodSecurity/, result.stderr);
  });

  it("runs the containers' commands with only the gateway's service account token: the rights it has are the ones it uses, the function service has none", async (t) => {
    const placement = await testPlacement(t);
    const { gateway: namespace, objects: served } = placement;
    const prefix = `${namespace}.causeway.dev`;
    const objects = withPrefix(uniqueClusterNames(await render(OVERLAY, placement), namespace), prefix);
    await applyRbac(t, objects);
    const account = serviceAccount(namespace, GATEWAY);
    const functionsAccount = serviceAccount(namespace, FUNCTIONS);
    assert.deepEqual(await grantedBeyondBaseline(account, namespace), [
      'create /configmaps',
      'create /secrets',
      'create admissionregistration.k8s.io/mutatingwebhookconfigurations',
      'create admissionregistration.k8s.io/validatingwebhookconfigurations',
      'create coordination.k8s.io/leases',
      `delete admissionregistration.k8s.io/mutatingwebhookconfigurations/${prefix}`,
      `delete admissionregistration.k8s.io/validatingwebhookconfigurations/${prefix}`,
      'delete coordination.k8s.io/leases',
      `get /configmaps/${KEYS}`,
      `get /secrets/${CERTIFICATES},${CERTIFICATES}-ca,${KEYS},${FUNCTION_CA},${FUNCTION_TLS}`,
      'get coordination.k8s.io/leases',
      'list coordination.k8s.io/leases',
      `patch admissionregistration.k8s.io/mutatingwebhookconfigurations/${prefix}`,
      `patch admissionregistration.k8s.io/validatingwebhookconfigurations/${prefix}`,
      `update /configmaps/${KEYS}`,
      `update /secrets/${CERTIFICATES},${CERTIFICATES}-ca,${KEYS},${FUNCTION_CA},${FUNCTION_TLS}`,
      'update coordination.k8s.io/leases',
    ]);
    assert.deepEqual(await grantedBeyondBaseline(functionsAccount, namespace), []);
    // It watches nothing: no right at all in the namespace whose objects it reviews.
    assert.deepEqual(
      (await grantedBeyondBaseline(account, served)).filter(
        (rule) => !rule.includes('webhookconfigurations'),
      ),
      [],
    );
    assert.deepEqual(
      await wrongPermissions([
        [account, namespace, ['get', `secrets/${KEYS}`], true],
        [account, namespace, ['update', `secrets/${KEYS}`], true],
        [account, namespace, ['get', `configmaps/${KEYS}`], true],
        [account, namespace, ['update', `configmaps/${KEYS}`], true],
        [account, namespace, ['get', 'secrets/another-secret'], false],
        [account, namespace, ['list', 'secrets'], false],
        [account, namespace, ['get', `configmaps/${CERTIFICATES}`], false],
        [account, namespace, ['list', 'configmaps'], false],
        [functionsAccount, namespace, ['get', `secrets/${KEYS}`], false],
        [functionsAccount, namespace, ['get', `configmaps/${KEYS}`], false],
        // The function service's certificate comes mounted; its CA's Secret is the gateway's alone.
        [account, namespace, ['get', `secrets/${FUNCTION_TLS}`], true],
        [account, namespace, ['update', `secrets/${FUNCTION_TLS}`], true],
        [account, namespace, ['delete', `secrets/${FUNCTION_TLS}`], false],
        [functionsAccount, namespace, ['get', `secrets/${FUNCTION_TLS}`], false],
        [functionsAccount, namespace, ['get', `secrets/${FUNCTION_CA}`], false],
      ]),
      [],
    );

    const dir = await mkdtemp(join(tmpdir(), 'causeway-deploy-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const cli = await bundleCli(join(dir, 'cli'));
    const kubeconfig = join(dir, 'kubeconfig');
    await writeServiceAccountKubeconfig(kubeconfig, namespace, GATEWAY);
    const port = await freePort();
    const webhookPort = await freePort();
    await kubectlOk(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: WEBHOOKS, namespace },
        spec: { type: 'ExternalName', externalName: 'localhost' },
      }),
    );
    const deployment = find<Deployment>(objects, 'Deployment', GATEWAY);
    const { args: containerArgs, liveness } = await withFreeLiveness(
      await withMountedScopes(onlyContainer(deployment).args ?? [], deployment, objects, dir),
    );
    const args = inNamespace(
      withFlag(
        withFlag(
          withFlag(containerArgs, '--functions', `admission=https://127.0.0.1:${port}`),
          '--webhook-service',
          `$(POD_NAMESPACE)/${WEBHOOKS}:${webhookPort}`,
        ),
        '--webhook-listen',
        `127.0.0.1:${webhookPort}`,
      ),
      namespace,
    ).concat(['--annotation-prefix', prefix]);
    const functionsArgs = onlyContainer(find<Deployment>(objects, 'Deployment', FUNCTIONS)).args ?? [];
    const mounted = await withMountedCertificate(
      servedOnLoopback(functionsArgs, port),
      { namespace, name: FUNCTION_TLS },
      dir,
    );
    // The gateway first, then the service, once this test has played kubelet's part: mounting the
    // ConfigMap the gateway made as the file its --jwks-file names, and the Secret of the certificate
    // it issued the service as the files of --tls-cert and --tls-key.
    const { gateway, functions, published } = await startGatewayThenFunctions(t, {
      cli,
      // POD_NAMESPACE as the downward API gives it: its webhook configurations leave that namespace out.
      gateway: { args, env: { KUBECONFIG: kubeconfig, POD_NAMESPACE: namespace } },
      functions: { args: mounted.args },
      dir,
      beforeFunctions: mounted.mount,
    });
    await eventually(
      'the webhooks configured',
      async () => {
        assert.equal(gateway.exitCode, null, gateway.output());
        assert.equal(functions.exitCode, null, functions.output());
        return /the apiserver reaches them through the Service/.test(gateway.output()) ? true : undefined;
      },
      30_000, // the gateway retries the service at growing intervals until the keys are mounted
    );
    const [kid, ...more] = await keptKeys(namespace, KEYS);
    assert.deepEqual(more, []);
    assert.deepEqual(
      published.keys.map((key) => [key.kid, 'd' in key]),
      [[kid, false]],
    );

    // The example's handler refuses spec.field "not-allowed", with its own code.
    const refused = await eventually('the validating webhook in effect', async () => {
      const attempt = await kubectl(
        ['create', '--dry-run=server', '-n', served, '-f', '-'],
        JSON.stringify({
          apiVersion: 'kopf.dev/v1',
          kind: 'KopfExample',
          metadata: { name: 'refused' },
          spec: { field: 'not-allowed' },
        }),
      );
      assert.equal(gateway.exitCode, null, gateway.output());
      return attempt.code === 0 ? undefined : attempt.stderr;
    }).catch((error) => assert.fail(`${error.message}\n${gateway.output()}`));
    assert.match(refused, /I'm too lazy anyway\. Go away!/);
    // In the gateway's own namespace, nothing is sent to the function service: the same object passes.
    const own = await kubectl(
      ['create', '--dry-run=server', '-n', namespace, '-f', '-'],
      JSON.stringify({
        apiVersion: 'kopf.dev/v1',
        kind: 'KopfExample',
        metadata: { name: 'not-reviewed' },
        spec: { field: 'not-allowed' },
      }),
    );
    assert.equal(own.code, 0, own.stderr);
    const client = await kubeClient();
    const configuration = await client.get<{ webhooks: Array<{ namespaceSelector?: unknown }> }>(
      `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${prefix}`,
    );
    for (const webhook of configuration.webhooks) {
      assert.deepEqual(webhook.namespaceSelector, {
        matchExpressions: [
          { key: 'kubernetes.io/metadata.name', operator: 'In', values: [served] },
          { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [namespace] },
        ],
      });
    }
    // Ready once its lists are in, its webhook server serving: what puts it in the webhooks' Service.
    const readiness = await eventually('the gateway ready', async () => {
      const answer = await fetch(new URL('/readyz', liveness));
      return answer.status === 200 ? answer.json() : undefined;
    });
    assert.deepEqual(readiness, { ready: true });

    const kept = await client.get<{ data: Record<string, string> }>(
      `/api/v1/namespaces/${namespace}/secrets/${CERTIFICATES}`,
    );
    assert.deepEqual(Object.keys(kept.data).sort(), ['ca.crt', 'tls.crt', 'tls.key']);
    const authority = await client.get<{ data: Record<string, string> }>(
      `/api/v1/namespaces/${namespace}/secrets/${CERTIFICATES}-ca`,
    );
    assert.deepEqual(Object.keys(authority.data).sort(), ['ca.crt', 'ca.key']);

    gateway.kill('SIGTERM');
    assert.equal((await new Promise((resolve) => gateway.once('exit', resolve))) ?? 0, 0, gateway.output());
    for (const kind of ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations']) {
      await assert.rejects(
        client.get(`/apis/admissionregistration.k8s.io/v1/${kind}/${prefix}`),
        (error) => error instanceof ApiError && error.status === 404,
        `${kind} removed on exit`,
      );
    }
    assert.deepEqual(problems(gateway.output()), [], gateway.output());
    assert.deepEqual(problems(functions.output()), [], functions.output());
  });
});
