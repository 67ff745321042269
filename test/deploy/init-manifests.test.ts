/**
 * What `causeway init` writes for a cluster, checked against the real test control plane: crd.yaml
 * installs and takes example.yaml; deploy/ passes `kubectl apply -k` as a server-side dry run under
 * the restricted pod security standard; its RBAC grants the gateway what it uses and nothing more;
 * and deploy/'s commands handle example.yaml with nothing but those rights, the gateway signing with
 * keys it makes and the function service verifying with their public halves. deploy/helm/values.yaml,
 * given to the Helm chart the causeway package ships, renders the same containers and rules.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { init } from '../../gateway/cli/commands/init/init.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  type Deployment,
  find,
  flagValue,
  handledByDeployed,
  imageOf,
  inNamespace,
  keptKeys,
  mountedFile,
  onlyContainer,
  problems,
  servedOnLoopback,
  startGatewayThenFunctions,
  withFlag,
  withFreeLiveness,
  withMountedCertificate,
  withMountedScopes,
} from '../support/deploy.ts';
import { helmTemplate } from '../support/helm.ts';
import {
  applyRbac,
  dryRunObjects,
  grantedBeyondBaseline,
  grants,
  kubectl,
  kubectlOk,
  type Manifest,
  parseYaml,
  rulesOf,
  serviceAccount,
  toYaml,
  writeServiceAccountKubeconfig,
  wrongPermissions,
} from '../support/kubectl.ts';
import { freePort } from '../support/processes.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
/** The Secret (private) and the ConfigMap (public) of the gateway's signing keys. */
const KEYS = 'causeway-signing-keys';
/** The Secret of the CA the gateway issues the function service's certificate with. */
const FUNCTION_CA = 'causeway-function-ca';

interface Project {
  dir: string;
  /** The project's name, which is also the namespace of the objects it serves. */
  name: string;
  /** The gateway's own namespace: `<name>-system`. */
  system: string;
  group: string;
  /** The CRD's name, and how kubectl names the resource. */
  resource: string;
  gateway: string;
  functions: string;
}

/**
 * A project made by `causeway init`, named after a fresh test namespace: deploy/ serves that
 * namespace from `<name>-system`, made here too, and its cluster-scoped names are this test's alone. Its causeway dependency is this
 * repository, as built into dist/ by the global setup's `npm pack`: the package's exports and its CLI.
 */
async function scaffold(t: TestContext): Promise<Project> {
  const name = await testNamespace(t);
  // Left in place, as testNamespace leaves its own.
  await kubectlOk(['create', 'namespace', `${name}-system`]);
  const parent = await mkdtemp(join(tmpdir(), 'causeway-init-'));
  t.after(() => rm(parent, { recursive: true, force: true }));
  const dir = join(parent, name);
  await init(dir);
  await mkdir(join(dir, 'node_modules'));
  await symlink(REPO, join(dir, 'node_modules', 'causeway'));
  const group = `${name}.example.com`;
  return {
    dir,
    name,
    system: `${name}-system`,
    group,
    resource: `examples.${group}`,
    gateway: `${name}-gateway`,
    functions: `${name}-functions`,
  };
}

/** Applies the project's crd.yaml and waits until the API serves it; deletes it after `t`. */
async function installCrd(t: TestContext, project: Project): Promise<void> {
  const crd = `customresourcedefinition/${project.resource}`;
  t.after(async () => {
    await kubectl(['delete', '--ignore-not-found', '--wait=false', crd]);
  });
  await kubectlOk(['apply', '-f', join(project.dir, 'crd.yaml')]);
  await kubectlOk(['wait', '--for=condition=Established', crd, '--timeout=30s']);
}

async function render(project: Project): Promise<Manifest[]> {
  return parseYaml(await kubectlOk(['kustomize', join(project.dir, 'deploy')]));
}

describe('causeway init: crd.yaml and deploy/', () => {
  it("starts the CLI in its image as Causeway's own image does: plain, its memory settings its own", async (t) => {
    const project = await scaffold(t);
    const image = imageOf(await readFile(join(project.dir, 'deploy/Dockerfile'), 'utf8'));
    assert.deepEqual(image.entrypoint, ['node', 'node_modules/causeway/dist/cli/causeway.mjs']);
    assert.deepEqual(image.env, { NODE_ENV: 'production' });
  });

  it('installs crd.yaml, whose schema takes example.yaml and refuses an Example without a greeting', async (t) => {
    const project = await scaffold(t);
    await installCrd(t, project);

    const applied = await kubectlOk(['apply', '-n', project.name, '-f', join(project.dir, 'example.yaml')]);
    assert.equal(applied, `example.${project.group}/example-1 created\n`);

    const noGreeting = {
      apiVersion: `${project.group}/v1`,
      kind: 'Example',
      metadata: { name: 'no-greeting' },
      spec: {},
    };
    const refused = await kubectl(['apply', '-n', project.name, '-f', '-'], JSON.stringify(noGreeting));
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /spec\.greeting: Required value/);
  });

  it('passes kubectl apply -k deploy as a server-side dry run, its pods in a namespace that enforces the restricted pod security standard', async (t) => {
    const project = await scaffold(t);
    await kubectlOk([
      'label',
      'namespace',
      project.system,
      'pod-security.kubernetes.io/enforce=restricted',
      'pod-security.kubernetes.io/warn=restricted',
    ]);

    const result = await kubectl(['apply', '--dry-run=server', '-k', join(project.dir, 'deploy')]);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(
      dryRunObjects(result.stdout),
      [
        `clusterrole.rbac.authorization.k8s.io/${project.gateway}`,
        `clusterrolebinding.rbac.authorization.k8s.io/${project.gateway}`,
        `configmap/${project.name}-function-scopes`, // the function service's scope, pinned
        `deployment.apps/${project.functions}`,
        `deployment.apps/${project.gateway}`,
        `poddisruptionbudget.policy/${project.gateway}`,
        `role.rbac.authorization.k8s.io/${project.gateway}`,
        `role.rbac.authorization.k8s.io/${project.gateway}`,
        `rolebinding.rbac.authorization.k8s.io/${project.gateway}`,
        `rolebinding.rbac.authorization.k8s.io/${project.gateway}`,
        // The account the gateway writes the service's children and events as (--impersonate).
        `role.rbac.authorization.k8s.io/${project.name}`,
        `rolebinding.rbac.authorization.k8s.io/${project.name}`,
        `serviceaccount/${project.name}`,
        `service/${project.functions}`,
        `serviceaccount/${project.functions}`,
        `serviceaccount/${project.gateway}`,
      ].sort(),
    );
    // Pod security admission warns about pod templates that the namespace's pods could not have.
    assert.doesNotMatch(result.stderr, /PodSecurity/, result.stderr);

    const objects = await render(project);
    for (const name of [project.gateway, project.functions]) {
      const deployment = find<Deployment>(objects, 'Deployment', name);
      const pod = deployment.spec.template.spec;
      assert.deepEqual(
        pod.containers.map((container) => container.image),
        [`${project.name}:0.1.0`],
      );
      assert.equal(pod.automountServiceAccountToken, name === project.gateway, `${name}: token mounted`);
      // The gateway makes its keys: no pod reads a Secret that users would have to create first.
      assert.deepEqual(
        onlyContainer(deployment).env?.filter((variable) => variable.valueFrom?.secretKeyRef) ?? [],
        [],
        `${name}: env from a Secret`,
      );
    }
    // Both run in the gateway's namespace, which it does not serve: it serves the project's.
    for (const object of objects.filter((each) => each.kind !== 'Role' && each.kind !== 'RoleBinding')) {
      if (object.metadata.namespace !== undefined)
        assert.equal(object.metadata.namespace, project.system, `${object.kind} ${object.metadata.name}`);
    }
    // The gateway keeps its keys in its namespace, the function service verifies with their public
    // halves there, mounted read-only as the ConfigMap's jwks.json.
    const gateway = onlyContainer(find<Deployment>(objects, 'Deployment', project.gateway));
    assert.equal(flagValue(gateway.args ?? [], '--namespace'), project.name);
    assert.equal(flagValue(gateway.args ?? [], '--signing-keys'), `$(POD_NAMESPACE)/${KEYS}`);
    const functions = find<Deployment>(objects, 'Deployment', project.functions);
    assert.deepEqual(
      mountedFile(functions, flagValue(onlyContainer(functions).args ?? [], '--jwks-file') ?? ''),
      {
        configMap: { name: KEYS },
        key: 'jwks.json',
        readOnly: true,
      },
    );
  });

  it("installs with Causeway's Helm chart too: deploy/helm/values.yaml renders, from the project, the containers and rules of deploy/'s kustomize, and passes a server-side dry run under the restricted pod security standard", async (t) => {
    const project = await scaffold(t);
    await kubectlOk([
      'label',
      'namespace',
      project.system,
      'pod-security.kubernetes.io/enforce=restricted',
      'pod-security.kubernetes.io/warn=restricted',
    ]);
    // As the project's README says: the chart the causeway package ships, the project's values.
    const chart = await helmTemplate(
      project.name,
      join(project.dir, 'node_modules/causeway/deploy/helm/causeway'),
      project.system,
      [join(project.dir, 'deploy/helm/values.yaml')],
    );
    const result = await kubectl(['apply', '--dry-run=server', '-f', '-'], toYaml(chart));
    assert.equal(result.code, 0, result.stderr);
    assert.doesNotMatch(result.stderr, /PodSecurity/, result.stderr);
    // The chart's own names: causeway-gateway, and the ClusterRole after the release's namespace.
    assert.deepEqual(
      dryRunObjects(result.stdout),
      [
        `clusterrole.rbac.authorization.k8s.io/causeway-gateway-${project.system}`,
        `clusterrolebinding.rbac.authorization.k8s.io/causeway-gateway-${project.system}`,
        'configmap/causeway-function-scopes',
        `deployment.apps/${project.functions}`,
        'deployment.apps/causeway-gateway',
        'networkpolicy.networking.k8s.io/causeway-gateway',
        'poddisruptionbudget.policy/causeway-gateway',
        'role.rbac.authorization.k8s.io/causeway-gateway',
        'role.rbac.authorization.k8s.io/causeway-gateway',
        'rolebinding.rbac.authorization.k8s.io/causeway-gateway',
        'rolebinding.rbac.authorization.k8s.io/causeway-gateway',
        `role.rbac.authorization.k8s.io/${project.name}`,
        `rolebinding.rbac.authorization.k8s.io/${project.name}`,
        `serviceaccount/${project.name}`,
        `service/${project.functions}`,
        `serviceaccount/${project.functions}`,
        'serviceaccount/causeway-gateway',
      ].sort(),
    );

    const kustomized = await render(project);
    const container = (objects: Manifest[], name: string) => {
      const { image, args, resources } = onlyContainer(find<Deployment>(objects, 'Deployment', name));
      return { image, args, resources };
    };
    assert.deepEqual(container(chart, 'causeway-gateway'), container(kustomized, project.gateway));
    assert.deepEqual(container(chart, project.functions), container(kustomized, project.functions));
    const scopes = (configMap: Manifest | undefined) =>
      Object.entries((configMap?.data ?? {}) as Record<string, string>).map(([key, text]) => [
        key,
        parseYaml(text),
      ]);
    assert.deepEqual(
      scopes(find(chart, 'ConfigMap', 'causeway-function-scopes')),
      scopes(kustomized.find((object) => object.kind === 'ConfigMap')),
    );
    for (const kind of ['Role', 'ClusterRole']) {
      assert.deepEqual(grants(rulesOf(chart, kind)), grants(rulesOf(kustomized, kind)), `${kind} rules`);
    }
    for (const namespace of [project.name, project.system]) {
      const inNamespace = (objects: Manifest[]) =>
        grants(
          rulesOf(
            objects.filter((object) => object.metadata.namespace === namespace),
            'Role',
          ),
        );
      assert.deepEqual(inNamespace(chart), inNamespace(kustomized), `Role rules in ${namespace}`);
    }
  });

  it('grants the gateway what it uses and nothing more, and the functions nothing', async (t) => {
    const project = await scaffold(t);
    const elsewhere = await testNamespace(t);
    await installCrd(t, project);
    await applyRbac(t, await render(project));
    const gateway = serviceAccount(project.system, project.gateway);
    const functions = serviceAccount(project.system, project.functions);
    const { name: served, system: namespace, resource, group } = project;
    const crd = `customresourcedefinitions.apiextensions.k8s.io/${resource}`;

    assert.deepEqual(
      await wrongPermissions([
        [gateway, namespace, ['get', '/apis'], true],
        [gateway, served, ['watch', resource], true],
        [gateway, served, ['patch', resource, '--subresource=status'], true],
        [gateway, served, ['create', 'events'], true],
        [gateway, namespace, ['get', crd], true],
        [gateway, namespace, ['get', `secrets/${KEYS}`], true],
        [gateway, namespace, ['update', `secrets/${KEYS}`], true],
        [gateway, namespace, ['get', `configmaps/${KEYS}`], true],
        [gateway, namespace, ['update', `configmaps/${KEYS}`], true],
        [gateway, namespace, ['create', 'secrets'], true],
        [gateway, namespace, ['create', 'configmaps'], true],
        [gateway, elsewhere, ['list', resource], false],
        [gateway, elsewhere, ['create', 'events'], false],
        [gateway, elsewhere, ['get', `secrets/${KEYS}`], false],
        [gateway, namespace, ['list', resource, '--all-namespaces'], false],
        // Nothing of the Examples' in its own namespace, nothing of its own in the one it serves.
        [gateway, namespace, ['list', resource], false],
        [gateway, namespace, ['create', 'events'], false],
        [gateway, served, ['get', `secrets/${KEYS}`], false],
        [gateway, served, ['create', 'secrets'], false],
        [gateway, served, ['create', 'pods'], false],
        [gateway, namespace, ['get', 'secrets/another-secret'], false],
        [gateway, namespace, ['list', 'secrets'], false],
        [gateway, namespace, ['delete', `secrets/${KEYS}`], false],
        [gateway, namespace, ['get', 'configmaps/kube-root-ca.crt'], false],
        [functions, served, ['list', resource], false],
        [functions, served, ['create', 'events'], false],
        [functions, namespace, ['get', `secrets/${KEYS}`], false],
        [functions, namespace, ['get', `configmaps/${KEYS}`], false],
        // The function service's TLS: the CA's Secret and the certificate's, the gateway's to keep.
        [gateway, namespace, ['get', `secrets/${FUNCTION_CA}`], true],
        [gateway, namespace, ['update', `secrets/${project.functions}-tls`], true],
        [gateway, namespace, ['delete', `secrets/${project.functions}-tls`], false],
        [functions, namespace, ['get', `secrets/${project.functions}-tls`], false],
        [functions, namespace, ['get', `secrets/${FUNCTION_CA}`], false],
      ]),
      [],
    );
    // The complete lists, in each namespace, beyond what any authenticated account may do.
    const crdGrant = `get apiextensions.k8s.io/customresourcedefinitions/${resource}`;
    assert.deepEqual(await grantedBeyondBaseline(gateway, namespace), [
      'create /configmaps',
      'create /secrets',
      'create coordination.k8s.io/leases',
      'delete coordination.k8s.io/leases',
      `get /configmaps/${KEYS}`,
      `get /secrets/${KEYS},${FUNCTION_CA},${project.functions}-tls`,
      crdGrant,
      'get coordination.k8s.io/leases',
      `impersonate /serviceaccounts/${project.name}`,
      'list coordination.k8s.io/leases',
      `update /configmaps/${KEYS}`,
      `update /secrets/${KEYS},${FUNCTION_CA},${project.functions}-tls`,
      'update coordination.k8s.io/leases',
    ]);
    assert.deepEqual(await grantedBeyondBaseline(gateway, served), [
      'create /events',
      crdGrant,
      `get ${group}/examples`,
      `list ${group}/examples`,
      `patch ${group}/examples`,
      `patch ${group}/examples/status`,
      `watch ${group}/examples`,
    ]);
    assert.deepEqual(await grantedBeyondBaseline(functions, namespace), []);
    assert.deepEqual(await grantedBeyondBaseline(functions, served), []);
    // The account the gateway writes the service's events as (--impersonate), in the gateway's namespace:
    // events where the Examples are, that alone, and nothing in its own.
    const writer = serviceAccount(namespace, project.name);
    assert.deepEqual(await grantedBeyondBaseline(writer, served), ['create /events']);
    assert.deepEqual(await grantedBeyondBaseline(writer, namespace), []);
  });

  it("runs deploy/'s commands with nothing but the gateway's rights: it makes its keys, the function service verifies with them, example.yaml is handled", async (t) => {
    const project = await scaffold(t);
    await installCrd(t, project);
    const objects = await render(project);
    await applyRbac(t, objects);
    const kubeconfig = join(project.dir, 'gateway.kubeconfig');
    await writeServiceAccountKubeconfig(kubeconfig, project.system, project.gateway);

    // The image's entrypoint (the first test holds the Dockerfile to it), in the project as in /app.
    const cli = join(project.dir, 'node_modules/causeway/dist/cli/causeway.mjs');
    const port = await freePort();
    const gatewayContainer = onlyContainer(find<Deployment>(objects, 'Deployment', project.gateway));
    // The gateway's startup and liveness probes ask its --liveness endpoint, at its path and port; its
    // readiness probe /readyz on that port.
    const declared = new URL(flagValue(gatewayContainer.args ?? [], '--liveness') ?? '');
    const livenessPort = gatewayContainer.ports?.find((each) => each.containerPort === Number(declared.port));
    assert.ok(livenessPort, `no container port ${declared.port} for the liveness endpoint`);
    for (const [probe, path] of [
      [gatewayContainer.startupProbe, declared.pathname],
      [gatewayContainer.livenessProbe, declared.pathname],
      [gatewayContainer.readinessProbe, '/readyz'],
    ] as const) {
      assert.equal(probe?.httpGet?.path, path);
      assert.ok([livenessPort.name, livenessPort.containerPort].includes(probe?.httpGet?.port));
    }
    const gatewayDeployment = find<Deployment>(objects, 'Deployment', project.gateway);
    const { args: containerArgs, liveness } = await withFreeLiveness(
      await withMountedScopes(gatewayContainer.args ?? [], gatewayDeployment, objects, project.dir),
    );
    const gatewayArgs = inNamespace(
      withFlag(containerArgs, '--functions', `${project.name}=https://127.0.0.1:${port}`),
      project.system,
    );
    const served = onlyContainer(find<Deployment>(objects, 'Deployment', project.functions)).args ?? [];
    // The image serves the build of operator.ts (npm run build): Node runs the source as it is.
    assert.equal(served[1], 'dist/operator.js');
    const mounted = await withMountedCertificate(
      servedOnLoopback(served.with(1, 'operator.ts'), port),
      { namespace: project.system, name: `${project.functions}-tls` },
      project.dir,
    );
    // The gateway first, then the service, once this test has played kubelet's part: mounting the
    // ConfigMap the gateway made as the file its --jwks-file names, and the Secret of the certificate
    // it issued the service (over which it calls it) as the files of --tls-cert and --tls-key.
    const { gateway, functions, published } = await startGatewayThenFunctions(t, {
      cli,
      cwd: project.dir,
      gateway: { args: gatewayArgs, env: { KUBECONFIG: kubeconfig, POD_NAMESPACE: project.system } },
      functions: { args: mounted.args },
      dir: project.dir,
      beforeFunctions: mounted.mount,
    });
    await kubectlOk(['apply', '-n', project.name, '-f', join(project.dir, 'example.yaml')]);

    const path = `/apis/${project.group}/v1/namespaces/${project.name}/examples/example-1`;
    const handled = await handledByDeployed(gateway, functions, path);
    assert.deepEqual(handled.status?.create_fn, { message: 'Hello, example-1!' });
    assert.equal((await fetch(liveness)).status, 200, 'the liveness endpoint says the gateway is healthy');
    assert.equal(
      (await fetch(new URL('/readyz', liveness))).status,
      200,
      'the readiness endpoint says it is ready',
    );
    const [kid, ...more] = await keptKeys(project.system, KEYS);
    assert.deepEqual(more, []);
    assert.deepEqual(
      published.keys.map((key) => [key.kid, 'd' in key]),
      [[kid, false]],
    );
    assert.deepEqual(problems(gateway.output()), [], gateway.output());
    assert.deepEqual(problems(functions.output()), [], functions.output());
  });
});
