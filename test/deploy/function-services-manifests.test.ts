/**
 * deploy/examples/function-services: the gateway serving the function service that a FunctionService
 * object names, checked against the real test control plane — the committed CRD is the one `causeway
 * crd` prints, the overlay passes a server-side dry run under the restricted pod security standard,
 * its RBAC is applied for real and probed, and the containers' commands run with nothing but the
 * gateway's service account token: the gateway finds the FunctionService, says in its status that the
 * service is not there yet, reads it again, serves it once it answers, and a KopfExample is handled.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { bundleCli } from '../../deploy/build.ts';
import {
  FUNCTION_SERVICE,
  functionServiceDefinition,
} from '../../gateway/services/function-service-objects.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import {
  assertPlacedAndBound,
  type BundledCli,
  type Deployment,
  find,
  flagValue,
  inNamespace,
  installRbac,
  LAYOUT,
  onlyContainer,
  problems,
  REPO,
  render,
  type Service,
  servedOnLoopback,
  startGatewayThenFunctions,
  testPlacement,
  withFreeLiveness,
  withMountedCertificate,
} from '../support/deploy.ts';
import {
  dryRunObjects,
  grantedBeyondBaseline,
  kubectl,
  kubectlOk,
  type Manifest,
  serviceAccount,
  toYaml,
  withoutContentHash,
  writeServiceAccountKubeconfig,
  wrongPermissions,
} from '../support/kubectl.ts';
import { applyFile, eventually, kubeClient, statusOnceThere } from '../support/operator.ts';
import { freePort } from '../support/processes.ts';

const DIRECTORY = 'deploy/examples/function-services';
const OVERLAY = join(REPO, DIRECTORY);
const FUNCTION_SERVICE_CRD = new URL(`../../${DIRECTORY}/functionservice-crd.yaml`, import.meta.url);
const KOPFEXAMPLE_CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const OBJECT = new URL('../../examples/01-minimal/object.yaml', import.meta.url);
const GATEWAY = 'causeway-gateway';
const FUNCTIONS = 'kopfexample-functions';
const CLUSTER_RBAC = 'causeway-gateway-function-services';
/** The Secret (private) and the ConfigMap (public) of the gateway's signing keys. */
const KEYS = 'causeway-signing-keys';
/** The Secrets of the function service's TLS: the gateway's CA, and the certificate it issues the service. */
const FUNCTION_CA = 'causeway-function-ca';
const FUNCTION_TLS = 'kopfexample-functions-tls';
/** The FunctionService, named as the function service answers (operator({ name: 'kopfexample' })). */
const SERVICE = 'kopfexample';

describe(`${DIRECTORY}/functionservice-crd.yaml`, () => {
  it('is the FunctionService definition that `causeway crd` prints', async () => {
    assert.deepEqual(
      parse(await readFile(FUNCTION_SERVICE_CRD, 'utf8')),
      functionServiceDefinition(),
      `out of date: regenerate it with \`node gateway/cli/main.ts crd > ${DIRECTORY}/functionservice-crd.yaml\``,
    );
  });
});

describe(DIRECTORY, () => {
  before(async () => {
    // The Role and the FunctionService name these resources: they must exist for the checks to mean anything.
    await applyFile(KOPFEXAMPLE_CRD);
    await applyFile(FUNCTION_SERVICE_CRD);
  });

  it('renders the FunctionService naming the Service of the function service, and the gateway told to serve the FunctionServices of its namespace', async () => {
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
        `FunctionService/${SERVICE}`,
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

    // The base's --functions gives way to --function-services, its --function-scope to the
    // FunctionService's spec.scope and its --function-tls to spec.tls; the rest of its arguments stay.
    const args = onlyContainer(find<Deployment>(objects, 'Deployment', GATEWAY)).args ?? [];
    assert.deepEqual(args, [
      'gateway',
      '--function-services',
      '$(POD_NAMESPACE)',
      '--function-certificates',
      `$(POD_NAMESPACE)/${FUNCTION_CA}`,
      '--namespace', // the example's objects, not the gateway's own namespace
      LAYOUT.objects,
      '--signing-keys',
      `$(POD_NAMESPACE)/${KEYS}`,
      '--liveness',
      'http://0.0.0.0:8080/healthz',
      '--impersonate',
    ]);

    // The FunctionService's URL names the Service by its DNS name in the gateway's namespace, over
    // HTTPS with the certificate the gateway issues into the Secret the service mounts, on a port of
    // it that leads to the functions' serving port; no secretRef: the calls are signed with the
    // gateway's keys. Its scope is pinned there: the KopfExamples the example's handler watches.
    const { spec } = find(objects, 'FunctionService', SERVICE) as KubernetesObject & {
      spec: Record<string, unknown>;
    };
    assert.deepEqual(Object.keys(spec).sort(), ['scope', 'tls', 'url']);
    assert.deepEqual(spec.scope, { resources: ['kopfexamples.kopf.dev'] });
    assert.deepEqual(spec.tls, { secretName: FUNCTION_TLS });
    const url = new URL(String(spec.url));
    assert.equal(url.protocol, 'https:');
    assert.equal(url.hostname, `${FUNCTIONS}.${LAYOUT.gateway}.svc`);
    const service = find<Service>(objects, 'Service', FUNCTIONS);
    const servicePort = service.spec.ports.find((port) => port.port === Number(url.port));
    assert.ok(servicePort, `Service ${url.hostname} has no port ${url.port}`);
    const functions = onlyContainer(find<Deployment>(objects, 'Deployment', FUNCTIONS));
    const containerPort = functions.ports?.find((port) => port.name === servicePort.targetPort);
    assert.equal(flagValue(functions.args ?? [], '--port'), String(containerPort?.containerPort));
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
    const result = await kubectl(
      ['apply', '--dry-run=server', '-f', '-'],
      toYaml(await render(OVERLAY, placement)),
    );
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(
      dryRunObjects(result.stdout),
      [
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
        `functionservice.causeway.dev/${SERVICE}`,
      ].sort(),
    );
    assert.doesNotMatch(result.stderr, /PodSecurity/, result.stderr);
  });

  it('grants the gateway what it uses of FunctionServices and nothing more: no write of their spec, no other Secret', async (t) => {
    const placement = await testPlacement(t);
    const { gateway: namespace, objects: served } = placement;
    const elsewhere = (await testPlacement(t)).objects;
    await installRbac(t, OVERLAY, placement);
    const gateway = serviceAccount(namespace, GATEWAY);
    const functions = serviceAccount(namespace, FUNCTIONS);
    const fns = `${FUNCTION_SERVICE.plural}.${FUNCTION_SERVICE.group}`;
    const kex = 'kopfexamples.kopf.dev';

    const expectations: Array<[user: string, ns: string, args: string[], allowed: boolean]> = [
      // What gateway/services/function-service-objects.ts does: list + watch, a get when it tries a
      // service again, merge patches of the status.
      [gateway, namespace, ['list', fns], true],
      [gateway, namespace, ['watch', fns], true],
      [gateway, namespace, ['get', fns], true],
      [gateway, namespace, ['patch', fns, '--subresource=status'], true],
      // Never the spec, which is the user's, nor FunctionServices elsewhere, nor their CRD.
      [gateway, namespace, ['patch', fns], false],
      [gateway, namespace, ['update', fns], false],
      [gateway, namespace, ['create', fns], false],
      [gateway, namespace, ['delete', fns], false],
      [gateway, namespace, ['update', fns, '--subresource=status'], false],
      [gateway, elsewhere, ['list', fns], false],
      [gateway, elsewhere, ['patch', fns, '--subresource=status'], false],
      [gateway, namespace, ['list', fns, '--all-namespaces'], false],
      [gateway, namespace, ['get', `customresourcedefinitions.apiextensions.k8s.io/${fns}`], false],
      // No Secret but its keys: a secretRef's Secret would need a rule naming it.
      [gateway, namespace, ['get', 'secrets/kopfexample-secret'], false],
      [gateway, namespace, ['get', 'secrets'], false],
      [gateway, namespace, ['list', 'secrets'], false],
      // No FunctionService in the namespace it serves to them: their pins are its operator's.
      [gateway, served, ['list', fns], false],
      [gateway, served, ['patch', fns, '--subresource=status'], false],
      [gateway, served, ['get', `secrets/${KEYS}`], false],
      // The function service has no permissions at all.
      [functions, namespace, ['get', fns], false],
      [functions, namespace, ['list', kex], false],
    ];
    assert.deepEqual(await wrongPermissions(expectations), []);

    // The complete lists, beyond what any authenticated account may do: 01-minimal's and the
    // FunctionServices', in its own namespace; the example's objects in the one it serves.
    const crd = `get apiextensions.k8s.io/customresourcedefinitions/${kex}`;
    assert.deepEqual(await grantedBeyondBaseline(gateway, namespace), [
      'create /configmaps',
      'create /secrets',
      'create coordination.k8s.io/leases',
      'delete coordination.k8s.io/leases',
      `get /configmaps/${KEYS}`,
      `get /secrets/${KEYS},${FUNCTION_CA},${FUNCTION_TLS}`,
      crd,
      'get causeway.dev/functionservices',
      'get coordination.k8s.io/leases',
      `impersonate /serviceaccounts/${SERVICE}`,
      'list causeway.dev/functionservices',
      'list coordination.k8s.io/leases',
      'patch causeway.dev/functionservices/status',
      `update /configmaps/${KEYS}`,
      `update /secrets/${KEYS},${FUNCTION_CA},${FUNCTION_TLS}`,
      'update coordination.k8s.io/leases',
      'watch causeway.dev/functionservices',
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
    // The account the gateway writes the service's events as (--impersonate), in its FunctionService's
    // namespace: events where the objects are, that alone, and nothing in its own.
    assert.deepEqual(await grantedBeyondBaseline(serviceAccount(namespace, SERVICE), served), [
      'create /events',
    ]);
    assert.deepEqual(await grantedBeyondBaseline(serviceAccount(namespace, SERVICE), namespace), []);
  });

  it("runs the containers' commands: a gateway holding only its service account's token serves the FunctionService, writes what it found in its status, and a KopfExample is handled", async (t) => {
    const placement = await testPlacement(t);
    const { gateway: namespace, objects: served } = placement;
    await installRbac(t, OVERLAY, placement);
    const objects = await render(OVERLAY, placement);
    const dir = await mkdtemp(join(tmpdir(), 'causeway-deploy-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const cli = await bundleCli(join(dir, 'cli'));
    // What the kubelet would give the gateway: a token of its service account, and the API server.
    const kubeconfig = join(dir, 'kubeconfig');
    await writeServiceAccountKubeconfig(kubeconfig, namespace, GATEWAY);

    // The function service on a free loopback port instead of 0.0.0.0:8080, and the FunctionService
    // naming it there, applied with the rest, before the gateway starts.
    const port = await freePort();
    const functionService = find<Manifest & { spec: Record<string, unknown> }>(
      objects,
      'FunctionService',
      SERVICE,
    );
    await kubectlOk(
      ['apply', '-f', '-'],
      toYaml([{ ...functionService, spec: { ...functionService.spec, url: `https://127.0.0.1:${port}` } }]),
    );
    const { args: containerArgs } = await withFreeLiveness(
      onlyContainer(find<Deployment>(objects, 'Deployment', GATEWAY)).args ?? [],
    );
    // A loopback URL, which a gateway refuses unless told otherwise.
    const gatewayArgs = inNamespace(containerArgs, namespace).concat('--allow-loopback-functions');
    const mounted = await withMountedCertificate(
      servedOnLoopback(onlyContainer(find<Deployment>(objects, 'Deployment', FUNCTIONS)).args ?? [], port),
      { namespace, name: FUNCTION_TLS },
      dir,
    );

    const client = await kubeClient();
    const { group, version, plural } = FUNCTION_SERVICE;
    const path = `/apis/${group}/${version}/namespaces/${namespace}/${plural}/${SERVICE}`;
    /** The FunctionService's status once the gateway has written `phase` for `generation` of it. */
    const statusOnce = (gateway: BundledCli, phase: string, generation: number) =>
      eventually(
        `FunctionService ${SERVICE} ${phase} at generation ${generation}`,
        async () => {
          assert.equal(gateway.exitCode, null, gateway.output());
          assert.doesNotMatch(gateway.output(), /[Ff]orbidden/, gateway.output()); // fail fast on a missing permission
          const { status } = await client.get<KubernetesObject>(path);
          return status?.phase === phase && status.observedGeneration === generation ? status : undefined;
        },
        30_000,
      );

    // As in a cluster, the service's pod waits for the gateway's public keys: the gateway, finding
    // the service not there yet, says so in the status (its patch of functionservices/status).
    let unreachable: Record<string, unknown> | undefined;
    const { gateway, functions } = await startGatewayThenFunctions(t, {
      cli,
      gateway: { args: gatewayArgs, env: { KUBECONFIG: kubeconfig, POD_NAMESPACE: namespace } },
      functions: { args: mounted.args },
      dir,
      beforeFunctions: async (started) => {
        unreachable = await statusOnce(started, 'Unreachable', 1);
        await mounted.mount(); // and its certificate, which the gateway issued first
      },
    });
    assert.match(String(unreachable?.lastError), /ECONNREFUSED/);
    // Ready at the same generation, nothing having changed the object: the gateway read it again when
    // it tried the service again (its get of the FunctionService).
    assert.deepEqual(await statusOnce(gateway, 'Ready', 1), {
      phase: 'Ready',
      protocol: 'causeway.dev/v1',
      handlers: ['create_fn'],
      observedGeneration: 1,
    });

    const [example] = await applyFile(OBJECT, served);
    assert.ok(example);
    assert.deepEqual(
      await statusOnceThere(
        `/apis/kopf.dev/v1/namespaces/${served}/kopfexamples/${example.metadata.name}`,
        'create_fn',
      ),
      { message: `hello ${example.metadata.name}` },
    );
    assert.match(
      gateway.output(),
      // As in a container: no terminal, so JSON.
      new RegExp(`"path":"/apis/kopf.dev/v1/namespaces/${served}/kopfexamples","msg":"watching"`),
    );

    // A change of the object reaches the gateway through its watch: the status follows it.
    await client.patch(path, 'merge', { spec: { timeoutSeconds: 10 } });
    await statusOnce(gateway, 'Ready', 2);

    assert.deepEqual(problems(gateway.output()), [], gateway.output());
    assert.deepEqual(problems(functions.output()), [], functions.output());
  });
});
