/**
 * deploy/: the kustomize manifests for examples/01-minimal, checked against the real test control
 * plane — server-side dry run under the restricted pod security standard, the gateway's RBAC applied
 * for real and probed with `kubectl auth can-i`, and the containers' commands run with nothing but
 * the gateway's service account token: the gateway makes its signing keys (and adds one when they are
 * due), and the function service verifies its calls with their public halves, from the ConfigMap its
 * pod mounts.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { bundleCli } from '../../deploy/build.ts';
import { IN_PROCESS } from '../../protocol/index.ts';
import {
  assertPlacedAndBound,
  type Binding,
  type Deployment,
  find,
  flagValue,
  handledByDeployed,
  imageOf,
  inNamespace,
  installRbac,
  keptKeys,
  LAYOUT,
  mountedFile,
  onlyContainer,
  type PublishedKeys,
  problems,
  REPO,
  render,
  type Service,
  servedOnLoopback,
  startBundledCli,
  startGatewayThenFunctions,
  testPlacement,
  withFlag,
  withFreeLiveness,
  withMountedCertificate,
  withMountedScopes,
} from '../support/deploy.ts';
import {
  dryRunObjects,
  grantedBeyondBaseline,
  kubectl,
  kubectlOk,
  type Manifest,
  type PolicyRule,
  parseYaml,
  serviceAccount,
  toYaml,
  withoutContentHash,
  writeServiceAccountKubeconfig,
  wrongPermissions,
} from '../support/kubectl.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  kubeClient,
  statusOnceThere,
} from '../support/operator.ts';
import { freePort } from '../support/processes.ts';

const OVERLAY = join(REPO, 'deploy/examples/01-minimal');
const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const OBJECT = new URL('../../examples/01-minimal/object.yaml', import.meta.url);
const GATEWAY = 'causeway-gateway';
const FUNCTIONS = 'kopfexample-functions';
/** The account the gateway writes the service's children and events as (--impersonate). */
const SERVICE = 'kopfexample';
const CLUSTER_RBAC = 'causeway-gateway-kopfexample';
/** The Secret (private) and the ConfigMap (public) of the gateway's signing keys. */
const KEYS = 'causeway-signing-keys';
/** The Secrets of the function service's TLS: the gateway's CA, and the certificate it issues the service. */
const FUNCTION_CA = 'causeway-function-ca';
const FUNCTION_TLS = 'kopfexample-functions-tls';

/** Every object the overlay renders, as `kubectl apply` names them. */
const EXPECTED = [
  `serviceaccount/${GATEWAY}`,
  `serviceaccount/${FUNCTIONS}`,
  `serviceaccount/${SERVICE}`,
  `role.rbac.authorization.k8s.io/${GATEWAY}`,
  `role.rbac.authorization.k8s.io/${GATEWAY}`,
  `rolebinding.rbac.authorization.k8s.io/${GATEWAY}`,
  `rolebinding.rbac.authorization.k8s.io/${GATEWAY}`,
  `role.rbac.authorization.k8s.io/${SERVICE}`,
  `rolebinding.rbac.authorization.k8s.io/${SERVICE}`,
  `clusterrole.rbac.authorization.k8s.io/${CLUSTER_RBAC}`,
  `clusterrolebinding.rbac.authorization.k8s.io/${CLUSTER_RBAC}`,
  `deployment.apps/${GATEWAY}`,
  `deployment.apps/${FUNCTIONS}`,
  `poddisruptionbudget.policy/${GATEWAY}`,
  `service/${FUNCTIONS}`,
  'configmap/causeway-function-scopes',
].sort();

describe('deploy/examples/01-minimal', () => {
  before(async () => {
    // The Role names kopfexamples.kopf.dev: the resource must exist for the checks to mean anything.
    await applyFile(CRD);
  });

  it("renders with kubectl kustomize: every object in the gateway's namespace but its rights on the example's, bound to its service account", async () => {
    const objects = await render(OVERLAY);
    assert.deepEqual(
      objects.map((object) => `${object.kind}/${withoutContentHash(object.metadata.name)}`).sort(),
      [
        `ClusterRole/${CLUSTER_RBAC}`,
        `ClusterRoleBinding/${CLUSTER_RBAC}`,
        'ConfigMap/causeway-function-scopes', // the scope pinned for each function service
        `Deployment/${FUNCTIONS}`,
        `Deployment/${GATEWAY}`,
        `PodDisruptionBudget/${GATEWAY}`,
        `Role/${GATEWAY}`,
        `Role/${GATEWAY}`,
        `RoleBinding/${GATEWAY}`,
        `RoleBinding/${GATEWAY}`,
        `Role/${SERVICE}`, // what the gateway writes as the service (--impersonate): its events
        `RoleBinding/${SERVICE}`,
        `Service/${FUNCTIONS}`,
        `ServiceAccount/${FUNCTIONS}`,
        `ServiceAccount/${GATEWAY}`,
        `ServiceAccount/${SERVICE}`,
      ].sort(),
    );
    assertPlacedAndBound(objects, LAYOUT, GATEWAY);
    // The gateway's own namespace holds its keys and account: it serves the example's objects elsewhere.
    // The service's account (--impersonate) has its Role where the objects are only.
    const rolesOf = (name: string) =>
      objects
        .filter((object) => object.kind === 'Role' && object.metadata.name === name)
        .map((role) => role.metadata.namespace)
        .sort();
    assert.deepEqual(rolesOf(GATEWAY), [LAYOUT.gateway, LAYOUT.objects]);
    assert.deepEqual(rolesOf(SERVICE), [LAYOUT.objects]);
    for (const name of [GATEWAY, FUNCTIONS]) {
      const deployment = find<Deployment>(objects, 'Deployment', name);
      assert.equal(onlyContainer(deployment).image, 'causeway:0.1.0');
      assert.equal(deployment.spec.template.spec.serviceAccountName, name);
    }
    // Two gateways that peer, rolled one at a time; the function service, one.
    const gateway = find<Deployment>(objects, 'Deployment', GATEWAY).spec;
    assert.equal(gateway.replicas, 2);
    assert.deepEqual(gateway.strategy, {
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
    });
    assert.equal(find<Deployment>(objects, 'Deployment', FUNCTIONS).spec.replicas, 1);
  });

  it('passes kubectl apply --dry-run=server, its pods in a namespace that enforces the restricted pod security standard', async (t) => {
    const placement = await testPlacement(t);
    await kubectlOk([
      'label',
      'namespace',
      placement.gateway,
      'pod-security.kubernetes.io/enforce=restricted',
      'pod-security.kubernetes.io/warn=restricted',
    ]);
    const objects = await render(OVERLAY, placement);

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
    const placement = await testPlacement(t);
    const { gateway: namespace, objects: served } = placement;
    const elsewhere = (await testPlacement(t)).objects;
    await installRbac(t, OVERLAY, placement);
    const gateway = serviceAccount(namespace, GATEWAY);
    const functions = serviceAccount(namespace, FUNCTIONS);
    const kex = 'kopfexamples.kopf.dev';

    const expectations: Array<[user: string, ns: string, args: string[], allowed: boolean]> = [
      // What gateway/gateway.ts does: discovery, list + watch, merge patches, the CRD's schema.
      [gateway, served, ['get', '/api'], true],
      [gateway, served, ['get', '/apis'], true],
      [gateway, served, ['list', kex], true],
      [gateway, served, ['watch', kex], true],
      [gateway, served, ['get', kex], true],
      [gateway, served, ['patch', kex], true],
      [gateway, served, ['patch', kex, '--subresource=status'], true],
      [gateway, served, ['get', `customresourcedefinitions.apiextensions.k8s.io/${kex}`], true],
      [gateway, served, ['create', 'events'], true],
      // Its signing keys (gateway/services/signing-keys.ts): the Secret and the ConfigMap, by name, made
      // at its first start.
      [gateway, namespace, ['get', `secrets/${KEYS}`], true],
      [gateway, namespace, ['update', `secrets/${KEYS}`], true],
      [gateway, namespace, ['get', `configmaps/${KEYS}`], true],
      [gateway, namespace, ['update', `configmaps/${KEYS}`], true],
      [gateway, namespace, ['create', 'secrets'], true],
      [gateway, namespace, ['create', 'configmaps'], true],
      // The function service's TLS (gateway/services/function-certificates.ts): its CA's Secret and the
      // Secret of the service's certificate, by name, made at its first start, renewed.
      [gateway, namespace, ['get', `secrets/${FUNCTION_CA}`], true],
      [gateway, namespace, ['update', `secrets/${FUNCTION_CA}`], true],
      [gateway, namespace, ['get', `secrets/${FUNCTION_TLS}`], true],
      [gateway, namespace, ['update', `secrets/${FUNCTION_TLS}`], true],
      // Never more than that.
      [gateway, namespace, ['delete', `secrets/${FUNCTION_TLS}`], false],
      [gateway, namespace, ['get', `configmaps/${FUNCTION_CA}`], false],
      [gateway, elsewhere, ['get', `secrets/${FUNCTION_CA}`], false],
      // Nothing of the example's in its own namespace, nothing of its own in the example's.
      [gateway, namespace, ['list', kex], false],
      [gateway, namespace, ['patch', kex], false],
      [gateway, namespace, ['create', 'events'], false],
      [gateway, served, ['get', `secrets/${KEYS}`], false],
      [gateway, served, ['create', 'secrets'], false],
      [gateway, served, ['create', 'configmaps'], false],
      [gateway, served, ['create', 'pods'], false],
      [gateway, served, ['get', 'leases.coordination.k8s.io'], false],
      [gateway, served, ['create', kex], false],
      [gateway, served, ['update', kex], false],
      [gateway, served, ['delete', kex], false],
      [gateway, served, ['deletecollection', kex], false],
      [gateway, served, ['update', kex, '--subresource=status'], false],
      [gateway, served, ['get', kex, '--subresource=status'], false],
      [gateway, namespace, ['get', 'secrets'], false],
      [gateway, namespace, ['list', 'secrets'], false],
      [gateway, namespace, ['watch', 'secrets'], false],
      [gateway, namespace, ['get', 'secrets/another-secret'], false],
      [gateway, namespace, ['update', 'secrets/another-secret'], false],
      [gateway, namespace, ['patch', `secrets/${KEYS}`], false],
      [gateway, namespace, ['delete', `secrets/${KEYS}`], false],
      [gateway, namespace, ['list', 'configmaps'], false],
      [gateway, namespace, ['get', 'configmaps/kube-root-ca.crt'], false],
      [gateway, namespace, ['delete', `configmaps/${KEYS}`], false],
      [gateway, elsewhere, ['get', `secrets/${KEYS}`], false],
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
      [functions, namespace, ['get', `secrets/${KEYS}`], false],
      // Its certificate comes mounted; the CA's Secret is the gateway's alone.
      [functions, namespace, ['get', `secrets/${FUNCTION_TLS}`], false],
      [functions, namespace, ['get', `secrets/${FUNCTION_CA}`], false],
      // It reads the gateway's public keys from its mounted volume, not from the API.
      [functions, namespace, ['get', `configmaps/${KEYS}`], false],
      [functions, namespace, ['get', `customresourcedefinitions.apiextensions.k8s.io/${kex}`], false],
    ];
    assert.deepEqual(await wrongPermissions(expectations), []);

    // The complete lists, beyond what any authenticated account may do (an account bound to nothing):
    // in its own namespace, what it keeps; in the example's, the objects it serves.
    const crd = 'get apiextensions.k8s.io/customresourcedefinitions/kopfexamples.kopf.dev';
    assert.deepEqual(await grantedBeyondBaseline(gateway, namespace), [
      'create /configmaps',
      'create /secrets',
      'create coordination.k8s.io/leases',
      'delete coordination.k8s.io/leases',
      `get /configmaps/${KEYS}`,
      `get /secrets/${KEYS},${FUNCTION_CA},${FUNCTION_TLS}`,
      crd,
      'get coordination.k8s.io/leases',
      `impersonate /serviceaccounts/${SERVICE}`,
      'list coordination.k8s.io/leases',
      `update /configmaps/${KEYS}`,
      `update /secrets/${KEYS},${FUNCTION_CA},${FUNCTION_TLS}`,
      'update coordination.k8s.io/leases',
    ]);
    assert.deepEqual(await grantedBeyondBaseline(gateway, served), [
      'create /events',
      crd,
      'get kopf.dev/kopfexamples',
      'list kopf.dev/kopfexamples',
      'patch kopf.dev/kopfexamples',
      'patch kopf.dev/kopfexamples/status',
      'watch kopf.dev/kopfexamples',
    ]);
    assert.deepEqual(await grantedBeyondBaseline(functions, namespace), []);
    assert.deepEqual(await grantedBeyondBaseline(functions, served), []);
    // The account the gateway writes the service's events as (--impersonate), in the gateway's
    // namespace: events where the objects are, that alone; and the gateway may act as no other.
    const writer = serviceAccount(namespace, SERVICE);
    assert.deepEqual(await grantedBeyondBaseline(writer, served), ['create /events']);
    assert.deepEqual(await grantedBeyondBaseline(writer, namespace), []);
    assert.deepEqual(
      await wrongPermissions([
        [gateway, namespace, ['impersonate', `serviceaccounts/${SERVICE}`], true],
        [gateway, namespace, ['impersonate', `serviceaccounts/${FUNCTIONS}`], false],
        [gateway, namespace, ['impersonate', `serviceaccounts/${GATEWAY}`], false],
        [gateway, served, ['impersonate', `serviceaccounts/${SERVICE}`], false],
        [gateway, elsewhere, ['impersonate', `serviceaccounts/${SERVICE}`], false],
        [gateway, namespace, ['impersonate', 'groups/system:masters'], false],
        [gateway, namespace, ['impersonate', 'users/admin'], false],
      ]),
      [],
    );
  });

  it('keeps the hardened defaults in every container, mounts no token into the functions, and needs no secret made by hand', async () => {
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
      // The gateway makes its keys: no pod reads a Secret that users would have to create first.
      assert.deepEqual(
        container.env?.filter((variable) => variable.valueFrom?.secretKeyRef) ?? [],
        [],
        `${where}: env from a Secret`,
      );
      // The only Secret mounted is the functions' certificate, which the gateway issues (--function-tls).
      assert.deepEqual(
        pod.volumes?.filter((volume) => volume.secret).map((volume) => volume.secret?.secretName) ?? [],
        name === FUNCTIONS ? [FUNCTION_TLS] : [],
        `${where}: Secret volumes`,
      );
    }

    const functionsPod = find<Deployment>(objects, 'Deployment', FUNCTIONS).spec.template.spec;
    assert.equal(functionsPod.automountServiceAccountToken, false);
    assert.equal(find(objects, 'ServiceAccount', FUNCTIONS).automountServiceAccountToken, false);
    const gatewayPod = find<Deployment>(objects, 'Deployment', GATEWAY).spec.template.spec;
    assert.equal(gatewayPod.automountServiceAccountToken, true);

    // Only the gateway's account, and the one it writes the service's events as, are bound to anything;
    // no rule has a wildcard, and the only writes are patches of what it serves, creating events and its
    // keys, updating its keys by name, its peering Leases, and acting as that account.
    const bindings = objects.filter((object) => object.kind.endsWith('Binding')) as Binding[];
    assert.deepEqual(
      [...new Set(bindings.flatMap((binding) => binding.subjects.map((s) => s.name)))].sort(),
      [GATEWAY, SERVICE],
    );
    assert.equal(find(objects, 'ServiceAccount', SERVICE).automountServiceAccountToken, false);
    const rules = objects.flatMap((object) => (object.rules as PolicyRule[] | undefined) ?? []);
    assert.ok(rules.length > 0);
    for (const rule of rules) {
      const fields = [...rule.verbs, ...(rule.resources ?? []), ...(rule.apiGroups ?? [])];
      assert.ok(!fields.includes('*'), `wildcard in ${JSON.stringify(rule)}`);
    }
    const writes = rules.flatMap((rule) =>
      rule.verbs
        .filter((verb) => !['get', 'list', 'watch'].includes(verb))
        .flatMap((verb) =>
          (rule.resources ?? []).map((resource) => [verb, resource, ...(rule.resourceNames ?? [])].join(' ')),
        ),
    );
    assert.deepEqual(writes.sort(), [
      'create configmaps',
      'create events',
      'create events', // the service's, as its account
      'create leases',
      'create secrets',
      'delete leases',
      `impersonate serviceaccounts ${SERVICE}`,
      'patch kopfexamples',
      'patch kopfexamples/status',
      `update configmaps ${KEYS}`,
      'update leases',
      `update secrets ${KEYS} ${FUNCTION_CA} ${FUNCTION_TLS}`,
    ]);
  });

  it("wires the gateway to the function service, the example's namespace and its signing keys, and probes the health check", async () => {
    const objects = await render(OVERLAY);
    const gateway = onlyContainer(find<Deployment>(objects, 'Deployment', GATEWAY));
    const args = gateway.args ?? [];
    assert.equal(args[0], 'gateway');
    assert.equal(args.includes('--all-namespaces'), false);
    // The example's namespace, not its own (POD_NAMESPACE), which it would serve to no function service.
    assert.equal(flagValue(args, '--namespace'), LAYOUT.objects);
    assert.equal(args.includes('--serve-own-namespace'), false);
    assert.deepEqual(gateway.env?.find((variable) => variable.name === 'POD_NAMESPACE')?.valueFrom, {
      fieldRef: { fieldPath: 'metadata.namespace' },
    });

    // --functions pins the example's name, and names the Service by its DNS name in the gateway's
    // namespace, over HTTPS, on a port of it that leads to the functions' serving port.
    const [name, target] = (flagValue(args, '--functions') ?? '').split('=');
    assert.equal(name, 'kopfexample');
    const url = new URL(target ?? '');
    assert.equal(url.protocol, 'https:');
    assert.equal(url.hostname, `${FUNCTIONS}.$(pod_namespace).svc`, 'URL hostnames are lowercased');
    assert.equal(args.includes('--allow-plain-http'), false);
    const service = find<Service>(objects, 'Service', FUNCTIONS);
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
      assert.equal(probe?.httpGet?.scheme, 'HTTPS');
      assert.ok([containerPort.name, containerPort.containerPort].includes(probe?.httpGet?.port));
    }

    // The service's scope is pinned from a mounted ConfigMap, and grants what the example declares.
    const [pinned, scopeFile] = (flagValue(args, '--function-scope') ?? '').split('=');
    assert.equal(pinned, 'kopfexample');
    const gatewayDeployment = find<Deployment>(objects, 'Deployment', GATEWAY);
    const { configMap, key, readOnly } = mountedFile(gatewayDeployment, scopeFile ?? '');
    assert.ok(readOnly);
    const scopes = find<Manifest & { data: Record<string, string> }>(
      objects,
      'ConfigMap',
      configMap?.name ?? '',
    );
    const example = (await import(join(REPO, 'examples/01-minimal/operator.ts'))).default;
    assert.deepEqual(parseYaml(scopes.data[key] ?? '')[0], example[IN_PROCESS].manifest().scope);

    // The gateway keeps its keys in its own namespace, the function service's too; the service verifies
    // with the public keys the gateway publishes there, mounted read-only as the ConfigMap's jwks.json.
    assert.equal(flagValue(args, '--signing-keys'), `$(POD_NAMESPACE)/${KEYS}`);
    assert.deepEqual(mountedFile(deployment, flagValue(functions.args ?? [], '--jwks-file') ?? ''), {
      configMap: { name: KEYS },
      key: 'jwks.json',
      readOnly: true,
    });

    // The gateway issues the service's certificate into the Secret the service mounts read-only, as the
    // files its --tls-cert and --tls-key name; the CA that signs it stays in a Secret of the gateway's.
    assert.equal(flagValue(args, '--function-tls'), `kopfexample=$(POD_NAMESPACE)/${FUNCTION_TLS}`);
    assert.equal(flagValue(args, '--function-certificates'), `$(POD_NAMESPACE)/${FUNCTION_CA}`);
    for (const [flag, key] of [
      ['--tls-cert', 'tls.crt'],
      ['--tls-key', 'tls.key'],
    ]) {
      assert.deepEqual(mountedFile(deployment, flagValue(functions.args ?? [], flag as string) ?? ''), {
        secret: { secretName: FUNCTION_TLS },
        key,
        readOnly: true,
      });
    }

    // The gateway's startup and liveness probes ask its --liveness endpoint, at its path and port; its
    // readiness probe /readyz on that port.
    const liveness = new URL(flagValue(args, '--liveness') ?? '');
    assert.equal(liveness.hostname, '0.0.0.0', 'reachable by the kubelet, from outside the pod');
    const livenessPort = gateway.ports?.find((port) => port.containerPort === Number(liveness.port));
    assert.ok(livenessPort, `no container port ${liveness.port} for the liveness endpoint`);
    for (const [probe, path] of [
      [gateway.startupProbe, liveness.pathname],
      [gateway.livenessProbe, liveness.pathname],
      [gateway.readinessProbe, '/readyz'],
    ] as const) {
      assert.equal(probe?.httpGet?.path, path);
      assert.ok([livenessPort.name, livenessPort.containerPort].includes(probe?.httpGet?.port));
    }
  });

  it("runs the containers' commands: a gateway holding only its service account's token makes its keys and rotates them, the function service verifies with their public halves", async (t) => {
    const placement = await testPlacement(t);
    const { gateway: namespace, objects: served } = placement;
    await installRbac(t, OVERLAY, placement);
    const objects = await render(OVERLAY, placement);
    // The image starts the bundled CLI with the container's args, as below: plain, its memory settings its own.
    const image = imageOf(await readFile(join(REPO, 'deploy/Dockerfile'), 'utf8'));
    assert.deepEqual(image.entrypoint, ['node', 'dist/cli/causeway.mjs']);
    assert.deepEqual(image.env, { NODE_ENV: 'production' });

    const dir = await mkdtemp(join(tmpdir(), 'causeway-deploy-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const cli = await bundleCli(join(dir, 'cli'));
    // What the kubelet would give the gateway: a token of its service account, and the API server.
    const kubeconfig = join(dir, 'kubeconfig');
    await writeServiceAccountKubeconfig(kubeconfig, namespace, GATEWAY);

    // The containers' arguments, expanded as the kubelet would; the function service on a free loopback
    // port instead of 0.0.0.0:8080, and the gateway calling it there, over HTTPS: the certificate it
    // issues names that address.
    const port = await freePort();
    const deployment = find<Deployment>(objects, 'Deployment', GATEWAY);
    const { args: containerArgs, liveness } = await withFreeLiveness(
      await withMountedScopes(onlyContainer(deployment).args ?? [], deployment, objects, dir),
    );
    const gatewayArgs = inNamespace(
      withFlag(containerArgs, '--functions', `kopfexample=https://127.0.0.1:${port}`),
      namespace,
    );
    const { args: functionsArgs, mount } = await withMountedCertificate(
      servedOnLoopback(onlyContainer(find<Deployment>(objects, 'Deployment', FUNCTIONS)).args ?? [], port),
      { namespace, name: FUNCTION_TLS },
      dir,
    );
    // The gateway first, then the service, once this test has played kubelet's part: mounting the
    // ConfigMap the gateway made as the file its --jwks-file names, and the Secret it issued the
    // service's certificate into as the files of --tls-cert and --tls-key.
    const { gateway, functions, published } = await startGatewayThenFunctions(t, {
      cli,
      // POD_NAMESPACE as the downward API gives it: the gateway serves its own namespace to no service.
      gateway: { args: gatewayArgs, env: { KUBECONFIG: kubeconfig, POD_NAMESPACE: namespace } },
      functions: { args: functionsArgs },
      dir,
      beforeFunctions: mount,
    });

    const [example] = await applyFile(OBJECT, served);
    assert.ok(example);
    const client = await kubeClient();
    const path = `/apis/kopf.dev/v1/namespaces/${served}/kopfexamples/${example.metadata.name}`;
    const handled = await handledByDeployed(gateway, functions, path);
    assert.deepEqual(handled.status?.create_fn, { message: `hello ${example.metadata.name}` });
    assert.match(
      gateway.output(),
      // As in a container: no terminal, so JSON.
      new RegExp(`"path":"/apis/kopf.dev/v1/namespaces/${served}/kopfexamples","msg":"watching"`),
    );
    // What the kubelet's probes get: healthy, and no probe handler to report; ready.
    const probed = await fetch(liveness);
    assert.deepEqual([probed.status, await probed.json()], [200, {}]);
    const ready = await fetch(new URL('/readyz', liveness));
    assert.deepEqual([ready.status, await ready.json()], [200, { ready: true }]);

    // The gateway made one key, kept it in its Secret, published its public half only, and signs with it.
    const [kid, ...more] = await keptKeys(namespace, KEYS);
    assert.deepEqual(more, []);
    assert.deepEqual(
      published.keys.map((key) => [key.kid, 'd' in key]),
      [[kid, false]],
    );
    assert.match(gateway.output(), new RegExp(`signing calls to function services with key ${kid}`));
    // It made the CA of the function services' certificates and issued the service's, over which it
    // called it.
    assert.match(
      gateway.output(),
      new RegExp(
        `issued a certificate for 127\\.0\\.0\\.1 into Secret ${namespace}/${FUNCTION_TLS} \\(there was none\\)`,
      ),
    );
    assert.deepEqual(problems(gateway.output()), [], gateway.output());

    // Restarted once the key is 30 days old (--key-rotation-days): the gateway adds a key, replacing
    // both objects with its own rights, and signs on with the old one until the new one has had time
    // to reach the service, whose file this test leaves as it was.
    const stopped = once(gateway, 'exit');
    gateway.kill('SIGTERM');
    await stopped;
    const secretPath = `/api/v1/namespaces/${namespace}/secrets/${KEYS}`;
    const kept = await client.get<{ data: Record<string, string> }>(secretPath);
    const keys = JSON.parse(Buffer.from(kept.data['keys.json'] ?? '', 'base64').toString()) as Array<{
      created: number;
    }>;
    const aged = keys.map((key) => ({ ...key, created: key.created - 30 * 24 * 3600_000 }));
    await client.patch(secretPath, 'merge', {
      data: { 'keys.json': Buffer.from(JSON.stringify(aged)).toString('base64') },
    });
    const restarted = startBundledCli(t, cli, gatewayArgs, {
      KUBECONFIG: kubeconfig,
      POD_NAMESPACE: namespace,
    });
    const republished = await eventually('a second key published', async () => {
      assert.equal(restarted.exitCode, null, restarted.output());
      const configMap = await client.get<{ data: Record<string, string> }>(
        `/api/v1/namespaces/${namespace}/configmaps/${KEYS}`,
      );
      const kids = (JSON.parse(configMap.data['jwks.json'] ?? '{}') as PublishedKeys).keys.map(
        (key) => key.kid,
      );
      return kids.length === 2 ? kids : undefined;
    });
    assert.equal(republished[0], kid);
    assert.deepEqual(await keptKeys(namespace, KEYS), republished);
    const after = await createKopfExample(served, 'after-rotation');
    assert.deepEqual(await statusOnceThere(after, 'create_fn'), { message: 'hello after-rotation' });
    assert.match(restarted.output(), new RegExp(`signing calls to function services with key ${kid}`));
    // Restarted, it keeps the CA and the service's certificate, still valid: the service goes on with it.
    assert.doesNotMatch(restarted.output(), /made the CA|issued a certificate/);
    assert.deepEqual(problems(restarted.output()), [], restarted.output());
    assert.deepEqual(problems(functions.output()), [], functions.output());
  });
});
