/**
 * deploy/helm/causeway: the Helm chart, checked with the helm binary built from its Go module against
 * the real test control plane — `helm lint`, `helm template` of each documented combination of values
 * applied with `kubectl apply --dry-run=server` under the restricted pod security standard, the default
 * and admission renderings held to the kustomize overlays they mirror (01-minimal, 17-admission) and
 * each combination's RBAC to what `causeway rbac` prints for its gateway, and two real `helm install`s
 * (the defaults; a signing-keys Secret made beforehand with FunctionService objects) whose gateway,
 * run as the chart's ServiceAccount, handles a KopfExample.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { bundleCli } from '../../deploy/build.ts';
import { newKey } from '../../gateway/dispatch/keys.ts';
import { PRIVATE_KEYS_FILE } from '../../gateway/services/signing-keys.ts';
import { testCluster } from '../support/cluster.ts';
import {
  type Container,
  type Deployment,
  find,
  flagValue,
  handledByDeployed,
  inNamespace,
  keptKeys,
  LAYOUT,
  onlyContainer,
  type Placement,
  problems,
  REPO,
  render,
  type Service,
  servedOnLoopback,
  startGatewayThenFunctions,
  testPlacement,
  type Volume,
  withFlag,
  withFreeLiveness,
  withMountedCertificate,
  withMountedScopes,
} from '../support/deploy.ts';
import { helm, helmOk, helmTemplate } from '../support/helm.ts';
import {
  dryRunObjects,
  grants,
  kubectl,
  kubectlOk,
  type Manifest,
  parseYaml,
  rulesOf,
  toYaml,
  withoutContentHash,
  writeServiceAccountKubeconfig,
} from '../support/kubectl.ts';
import { applyFile } from '../support/operator.ts';
import { CAUSEWAY_CLI, freePort } from '../support/processes.ts';

const CHART = join(REPO, 'deploy/helm/causeway');
const OVERLAY = join(REPO, 'deploy/examples/01-minimal');
const ADMISSION_OVERLAY = join(REPO, 'deploy/examples/17-admission');
const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const FUNCTION_SERVICE_CRD = new URL(
  '../../deploy/examples/function-services/functionservice-crd.yaml',
  import.meta.url,
);
const OBJECT = new URL('../../examples/01-minimal/object.yaml', import.meta.url);
const GATEWAY = 'causeway-gateway';
const FUNCTIONS = 'kopfexample-functions';
const FUNCTION_TLS = 'kopfexample-functions-tls';
const RELEASE = 'causeway';
const WEBHOOKS = 'causeway-gateway-webhooks';
const WEBHOOK_CERTIFICATES = 'causeway-gateway-webhooks-tls';
interface NetworkPolicy extends Manifest {
  spec: {
    podSelector: { matchLabels: Record<string, string> };
    policyTypes: string[];
    ingress: Array<{ ports: Array<{ port: string | number; protocol: string }>; from?: object[] }>;
    egress?: Array<{ ports: Array<{ port: string | number; protocol: string }>; to?: object[] }>;
  };
}

/** A Secret of signing keys made before the release, not the chart's. */
const EXISTING_KEYS = 'operator-signing-keys';

/** The chart's values.yaml. */
const DEFAULT_VALUES = parse(await readFile(join(CHART, 'values.yaml'), 'utf8')) as {
  functionServices: [object];
};

/** A values file holding `values`, deleted after `t`; JSON is YAML. */
async function valuesFile(t: TestContext, values: object): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'causeway-helm-values-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'values.yaml');
  await writeFile(path, JSON.stringify(values));
  return path;
}

/** `helm template` of the chart released in the gateway's namespace, serving the objects' namespace. */
async function template(t: TestContext, placement: Placement, values: object = {}): Promise<Manifest[]> {
  const served = { namespaces: [placement.objects], ...values };
  return helmTemplate(RELEASE, CHART, placement.gateway, [await valuesFile(t, served)]);
}

/** What the Roles among `objects` in `namespace` grant. */
const grantsIn = (objects: Manifest[], namespace: string) =>
  grants(
    rulesOf(
      objects.filter((object) => object.metadata.namespace === namespace),
      'Role',
    ),
  );

/**
 * `causeway rbac` for a gateway of examples/01-minimal (or `module`) as the chart runs it in
 * `namespace`, the handlers read from the module, with the gateway's `flags` the values add. Not
 * --function-tls: it names a service of --functions, which `causeway rbac` would call signing with the
 * keys of --signing-keys, not made before the gateway runs.
 */
async function causewayRbac(
  { gateway: namespace, objects: served }: Placement,
  {
    module = 'examples/01-minimal/operator.ts',
    signingKeys = 'causeway-signing-keys',
    flags = [],
  }: { module?: string; signingKeys?: string; flags?: string[] } = {},
): Promise<string> {
  const { kubeconfigPath } = await testCluster();
  const args = [
    ...['rbac', '--module', module, '--namespace', served],
    ...['--signing-keys', `${namespace}/${signingKeys}`],
    ...['--function-certificates', `${namespace}/causeway-function-ca`],
    // In the pod, the gateway peers in its own namespace; outside one, this says so.
    ...['--peering-namespace', namespace],
    ...['--service-account', `${namespace}/${GATEWAY}`],
    '--impersonate', // as the chart's gateway, its services' accounts in its namespace (the pod's)
    ...flags,
  ];
  const { stdout } = await promisify(execFile)(process.execPath, [CAUSEWAY_CLI, ...args], {
    cwd: REPO,
    env: { ...process.env, KUBECONFIG: kubeconfigPath, POD_NAMESPACE: namespace },
  });
  return stdout;
}

/** A second function service beside the example's, with the values each entry takes. */
const TWO_FUNCTION_SERVICES = {
  functionServices: [
    {
      name: 'kopfexample',
      module: 'examples/01-minimal/operator.ts',
      scope: { resources: ['kopfexamples.kopf.dev'] },
    },
    {
      name: 'apps',
      module: 'examples/01-minimal/operator.ts',
      replicas: 2,
      env: [{ name: 'LOG_LEVEL', value: 'debug' }],
      resources: { requests: { cpu: '10m', memory: '64Mi' }, limits: { cpu: '100m', memory: '128Mi' } },
      scope: { resources: ['kopfexamples.kopf.dev'], children: ['deployments.apps'] },
    },
  ],
  rbac: {
    resources: [{ group: 'kopf.dev', resource: 'kopfexamples', status: true, crd: true }],
    children: [{ group: 'apps', resource: 'deployments' }],
  },
};

/** The gateway's settings: more peers, its own flags and environment, no PodDisruptionBudget. */
const GATEWAY_SETTINGS = {
  gateway: {
    replicas: 3,
    extraArgs: ['--priority', '10'],
    env: [{ name: 'MALLOC_ARENA_MAX', value: '4' }],
    podDisruptionBudget: { enabled: false },
  },
};

/** Metrics, and a ServiceMonitor for them. */
const METRICS = { metrics: { enabled: true, serviceMonitor: { enabled: true } } };

/**
 * examples/17-admission as deploy/examples/17-admission deploys it: a gateway serving the service's
 * admission handlers through the webhook Service, watching nothing.
 */
const ADMISSION = {
  functionServices: [
    {
      ...DEFAULT_VALUES.functionServices[0],
      module: 'examples/17-admission/operator.ts',
      scope: { resources: [], admission: ['kopfexamples.kopf.dev'] },
    },
  ],
  rbac: { resources: [] },
  admission: { enabled: true },
};

/** Admission behind the NetworkPolicy, with the overlay's placeholders for the apiserver's addresses. */
const ADMISSION_NETWORK_POLICY = {
  ...ADMISSION,
  networkPolicy: { apiserverCIDRs: ['0.0.0.0/0', '::/0'] },
};

/** The signing keys of a Secret made beforehand. */
const EXISTING_SIGNING_KEYS = { signingKeys: { existingSecret: EXISTING_KEYS } };

/** The function services as FunctionService objects, which the gateway serves (--function-services). */
const FUNCTION_SERVICE_OBJECTS = { functionServiceObjects: { enabled: true } };

/** Every optional setting at once: none of them stands in another's way. */
const EVERYTHING = {
  ...GATEWAY_SETTINGS,
  ...METRICS,
  ...ADMISSION_NETWORK_POLICY,
  ...EXISTING_SIGNING_KEYS,
  ...FUNCTION_SERVICE_OBJECTS,
};

/**
 * The Prometheus Operator's ServiceMonitor as far as the apiserver must know it to take one: its
 * group, kind and version, the schema left open. The test control plane has no such CRD otherwise.
 */
const SERVICE_MONITOR_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'servicemonitors.monitoring.coreos.com' },
  spec: {
    group: 'monitoring.coreos.com',
    names: {
      kind: 'ServiceMonitor',
      listKind: 'ServiceMonitorList',
      plural: 'servicemonitors',
      singular: 'servicemonitor',
    },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};

/** The account the gateway writes a service's children and events as (--impersonate), with its Role, as `kubectl apply` names them. */
const SERVICE_ACCOUNT_OBJECTS = (service: string, role = service) => [
  `serviceaccount/${service}`,
  `role.rbac.authorization.k8s.io/${role}`,
  `rolebinding.rbac.authorization.k8s.io/${role}`,
];

/** The objects but those of the example service's account: for a service that writes nothing. */
const withoutServiceAccount = (objects: string[]) =>
  objects.filter((name) => !SERVICE_ACCOUNT_OBJECTS('kopfexample').includes(name));

/** What `kubectl apply` names for the default values: a Role and its binding in each namespace. */
const DEFAULT_OBJECTS = (namespace: string) =>
  [
    ...SERVICE_ACCOUNT_OBJECTS('kopfexample'),
    `serviceaccount/${GATEWAY}`,
    `serviceaccount/${FUNCTIONS}`,
    `role.rbac.authorization.k8s.io/${GATEWAY}`,
    `role.rbac.authorization.k8s.io/${GATEWAY}`,
    `rolebinding.rbac.authorization.k8s.io/${GATEWAY}`,
    `rolebinding.rbac.authorization.k8s.io/${GATEWAY}`,
    `networkpolicy.networking.k8s.io/${GATEWAY}`,
    `clusterrole.rbac.authorization.k8s.io/${GATEWAY}-${namespace}`,
    `clusterrolebinding.rbac.authorization.k8s.io/${GATEWAY}-${namespace}`,
    `deployment.apps/${GATEWAY}`,
    `deployment.apps/${FUNCTIONS}`,
    `poddisruptionbudget.policy/${GATEWAY}`,
    `service/${FUNCTIONS}`,
    'configmap/causeway-function-scopes',
  ].sort();

/**
 * Admission only: no Role in the namespace served, where the gateway watches nothing, and no account
 * to write as for its service, which watches and applies nothing.
 */
const ADMISSION_OBJECTS = (namespace: string) => {
  const objects = withoutServiceAccount(DEFAULT_OBJECTS(namespace));
  for (const kind of ['role', 'rolebinding'])
    objects.splice(objects.indexOf(`${kind}.rbac.authorization.k8s.io/${GATEWAY}`), 1);
  return [...objects, `service/${WEBHOOKS}`].sort();
};

/** An object as `kubectl apply` names it: `kind.group/name`. */
const kubectlName = (object: Manifest) => {
  const group = object.apiVersion.includes('/') ? `.${object.apiVersion.split('/')[0]}` : '';
  return `${object.kind.toLowerCase()}${group}/${object.metadata.name}`;
};

/** Volumes with the hash kustomize appends to a generated ConfigMap's name taken off. */
const withoutHashedNames = (volumes: Volume[] | undefined) =>
  volumes?.map((volume) =>
    volume.configMap
      ? { ...volume, configMap: { ...volume.configMap, name: withoutContentHash(volume.configMap.name) } }
      : volume,
  );

/**
 * The chart's Deployment `name` has the overlay's pod spec: its container (args, probes, env,
 * resources, securityContext) and volumes; `overlayArg` maps each of the overlay's arguments.
 */
function assertSamePodSpec(
  chart: Manifest[],
  overlay: Manifest[],
  name: string,
  overlayArg: (arg: string) => string = (arg) => arg,
): void {
  const fromChart = find<Deployment>(chart, 'Deployment', name);
  const fromOverlay = find<Deployment>(overlay, 'Deployment', name);
  assert.equal(fromChart.spec.replicas, fromOverlay.spec.replicas, `${name}: replicas`);
  const { volumes, ...podSpec } = fromChart.spec.template.spec;
  const { volumes: overlayVolumes, ...overlayPodSpec } = fromOverlay.spec.template.spec;
  // Ports in any order: kustomize puts those of a patch before the base's.
  const byName = (ports: Container['ports']) => ports?.toSorted((a, b) => a.containerPort - b.containerPort);
  const container = onlyContainer(fromChart);
  const overlayContainer = onlyContainer(fromOverlay);
  assert.deepEqual(
    { ...podSpec, containers: [{ ...container, ports: byName(container.ports) }] },
    {
      ...overlayPodSpec,
      containers: [
        {
          ...overlayContainer,
          args: overlayContainer.args?.map(overlayArg),
          ports: byName(overlayContainer.ports),
        },
      ],
    },
    `${name}: pod spec`,
  );
  // The overlay's scopes ConfigMap carries kustomize's hash of its content; the chart's does not.
  assert.deepEqual(withoutHashedNames(volumes), withoutHashedNames(overlayVolumes), `${name}: volumes`);
}

/** The scopes a ConfigMap of scopes holds, one [key, parsed scope] each. */
const scopesIn = (configMap: Manifest | undefined) =>
  Object.entries((configMap?.data ?? {}) as Record<string, string>).map(([key, text]) => [
    key,
    parseYaml(text),
  ]);

/** A test's two namespaces, the gateway's enforcing the restricted pod security standard on its pods. */
async function restrictedPlacement(t: TestContext): Promise<Placement> {
  const placement = await testPlacement(t);
  await kubectlOk([
    'label',
    'namespace',
    placement.gateway,
    'pod-security.kubernetes.io/enforce=restricted',
    'pod-security.kubernetes.io/warn=restricted',
  ]);
  return placement;
}

/** `kubectl apply --dry-run=server` of `objects`: what it would apply, and no pod security warning. */
async function dryRun(objects: Manifest[]): Promise<string[]> {
  const result = await kubectl(['apply', '--dry-run=server', '-f', '-'], toYaml(objects));
  assert.equal(result.code, 0, result.stderr);
  assert.doesNotMatch(result.stderr, /PodSecurity/, result.stderr);
  return dryRunObjects(result.stdout);
}

/**
 * The chart renders the overlay's objects, with one difference: it names its ClusterRole (and its
 * binding) after the release's namespace, so two releases in two namespaces do not share one.
 */
function assertSameObjects(
  chart: Manifest[],
  overlay: Manifest[],
  overlayClusterRole: string,
  namespace: string,
) {
  // Not the NetworkPolicies: the chart ships its own (networkPolicy), the overlays one of admission or none.
  const names = (objects: Manifest[]) =>
    objects
      .filter((object) => object.kind !== 'NetworkPolicy')
      .map((object) => `${object.kind}/${withoutContentHash(object.metadata.name)}`)
      .sort();
  const renamed = (name: string) =>
    name.startsWith('ClusterRole') && name.endsWith(`/${overlayClusterRole}`)
      ? name.replace(`/${overlayClusterRole}`, `/${GATEWAY}-${namespace}`)
      : name;
  assert.deepEqual(names(chart), names(overlay).map(renamed));
}

describe('deploy/helm/causeway', () => {
  before(async () => {
    // The ClusterRole names kopfexamples.kopf.dev, and `causeway rbac` resolves it through discovery.
    await applyFile(CRD);
    await applyFile(FUNCTION_SERVICE_CRD);
    await kubectlOk(['apply', '-f', '-'], JSON.stringify(SERVICE_MONITOR_CRD));
    await kubectlOk([
      'wait',
      '--for=condition=Established',
      `crd/${SERVICE_MONITOR_CRD.metadata.name}`,
      'crd/functionservices.causeway.dev',
    ]);
  });

  it('passes helm lint --strict with the default values and each documented combination', async (t) => {
    for (const values of [
      {},
      TWO_FUNCTION_SERVICES,
      GATEWAY_SETTINGS,
      METRICS,
      ADMISSION,
      ADMISSION_NETWORK_POLICY,
      EXISTING_SIGNING_KEYS,
      FUNCTION_SERVICE_OBJECTS,
      EVERYTHING,
    ]) {
      const file = await valuesFile(t, values);
      await helmOk(['lint', '--strict', CHART, '--values', file]);
    }
  });

  it('refuses values its schema does not know, so a misspelt setting is not silently ignored, and a ServiceMonitor without metrics', async (t) => {
    const file = await valuesFile(t, { gateway: { replica: 3 } });
    const result = await helm(['template', RELEASE, CHART, '--values', file]);
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /values don't meet the specifications of the schema/);
    assert.match(result.stderr, /replica/);

    const monitorOnly = await valuesFile(t, { metrics: { serviceMonitor: { enabled: true } } });
    const refused = await helm(['template', RELEASE, CHART, '--values', monitorOnly]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /metrics\.serviceMonitor\.enabled needs metrics\.enabled/);

    const badSecret = await valuesFile(t, { signingKeys: { existingSecret: 'Signing_Keys' } });
    const badName = await helm(['template', RELEASE, CHART, '--values', badSecret]);
    assert.notEqual(badName.code, 0);
    assert.match(badName.stderr, /signingKeys\/existingSecret/);

    const twoCAs = await valuesFile(t, {
      admission: { enabled: true, clientCA: { pem: 'PEM', existingSecret: 'apiserver-ca' } },
    });
    const both = await helm(['template', RELEASE, CHART, '--values', twoCAs]);
    assert.notEqual(both.code, 0);
    assert.match(both.stderr, /admission\.clientCA: give one of pem, existingConfigMap and existingSecret/);

    // The gateway's own namespace, the release's, is never one it serves.
    const own = await helm(['template', RELEASE, CHART, '--namespace', 'kopfexample']);
    assert.notEqual(own.code, 0);
    assert.match(
      own.stderr,
      /namespaces names kopfexample, the release's namespace, where the gateway runs: it serves its own namespace \(its account, signing keys and CAs\) to no function service/,
    );
    const none = await valuesFile(t, { namespaces: [] });
    const nowhere = await helm(['template', RELEASE, CHART, '--values', none]);
    assert.notEqual(nowhere.code, 0);
    assert.match(nowhere.stderr, /namespaces/);
  });

  it('renders by default what the kustomize overlay 01-minimal does: the same objects, arguments, probes and rules, in the same namespaces', async (t) => {
    const chart = await template(t, LAYOUT);
    const overlay = await render(OVERLAY);
    assertSameObjects(chart, overlay, 'causeway-gateway-kopfexample', LAYOUT.gateway);
    for (const namespace of [LAYOUT.gateway, LAYOUT.objects]) {
      assert.deepEqual(
        grantsIn(chart, namespace),
        grantsIn(overlay, namespace),
        `Role rules in ${namespace}`,
      );
    }
    for (const name of [GATEWAY, FUNCTIONS]) assertSamePodSpec(chart, overlay, name);
    assert.deepEqual(
      scopesIn(find(chart, 'ConfigMap', 'causeway-function-scopes')),
      scopesIn(overlay.find((object) => object.kind === 'ConfigMap')),
    );
    for (const kind of ['Role', 'ClusterRole']) {
      assert.deepEqual(grants(rulesOf(chart, kind)), grants(rulesOf(overlay, kind)), `${kind} rules`);
    }
  });

  it('renders with admission.enabled what the kustomize overlay 17-admission does: the webhook Service, the flags and port serving it, the NetworkPolicy, and the rules', async (t) => {
    const chart = await template(t, LAYOUT, ADMISSION_NETWORK_POLICY);
    const overlay = await render(ADMISSION_OVERLAY);
    assertSameObjects(chart, overlay, 'causeway-gateway-admission', LAYOUT.gateway);
    // The overlay calls its function service "admission"; the chart names it after its Service.
    assertSamePodSpec(chart, overlay, GATEWAY, (arg) =>
      arg.replace(/^admission=/, 'kopfexample=').replace(/\/admission\.yaml$/, '/kopfexample.yaml'),
    );
    assertSamePodSpec(chart, overlay, FUNCTIONS);
    assert.deepEqual(
      scopesIn(find(chart, 'ConfigMap', 'causeway-function-scopes')),
      scopesIn(overlay.find((object) => object.kind === 'ConfigMap')).map(([key, scope]) => [
        String(key).replace(/^admission\./, 'kopfexample.'),
        scope,
      ]),
    );
    const service = find<Service>(chart, 'Service', WEBHOOKS);
    const overlayService = find<Service>(overlay, 'Service', WEBHOOKS);
    assert.deepEqual(service.spec.ports, overlayService.spec.ports);
    const podLabels = find<Deployment>(chart, 'Deployment', GATEWAY).spec.template.metadata.labels;
    for (const [label, value] of Object.entries(service.spec.selector)) {
      assert.equal(podLabels[label], value, `the webhook Service selects the gateway's label ${label}`);
    }
    // The chart's policy lets in what the overlay's does (the apiserver's addresses, to the webhook
    // port), and restricts egress too.
    const policy = find<NetworkPolicy>(chart, 'NetworkPolicy', GATEWAY);
    const overlayPolicy = find<NetworkPolicy>(overlay, 'NetworkPolicy', WEBHOOKS);
    assert.deepEqual(policy.spec.ingress, overlayPolicy.spec.ingress);
    assert.deepEqual(policy.spec.policyTypes, ['Ingress', 'Egress']);
    for (const [label, value] of Object.entries(policy.spec.podSelector.matchLabels)) {
      assert.equal(podLabels[label], value, `the NetworkPolicy selects the gateway's label ${label}`);
    }
    for (const kind of ['Role', 'ClusterRole']) {
      assert.deepEqual(grants(rulesOf(chart, kind)), grants(rulesOf(overlay, kind)), `${kind} rules`);
    }
  });

  it('grants by default what `causeway rbac` prints for the gateway it runs, and takes that output as rbac.manifest', async (t) => {
    const placement = await testPlacement(t);
    const printed = await causewayRbac(placement);
    const expected = parseYaml(printed);
    const defaults = await template(t, placement);
    // What the chart's --function-tls adds, which `causeway rbac --module` cannot be told.
    const functionTls = grants([
      { apiGroups: [''], resources: ['secrets'], resourceNames: [FUNCTION_TLS], verbs: ['get', 'update'] },
    ]);
    assert.deepEqual(
      grants(rulesOf(defaults, 'Role')),
      [...grants(rulesOf(expected, 'Role')), ...functionTls].sort(),
    );
    assert.deepEqual(grantsIn(defaults, placement.objects), grantsIn(expected, placement.objects));
    assert.deepEqual(grants(rulesOf(defaults, 'ClusterRole')), grants(rulesOf(expected, 'ClusterRole')));
    // Given as a value, its objects replace the chart's rules; its ServiceAccount is the chart's own.
    const given = await template(t, placement, { rbac: { manifest: printed } });
    // Helm orders what it renders by kind.
    const rbacKinds = (objects: Manifest[]) =>
      objects
        .filter((object) => /Role/.test(object.kind))
        .sort((a, b) => kubectlName(a).localeCompare(kubectlName(b)));
    assert.deepEqual(rbacKinds(given), rbacKinds(expected));
    assert.deepEqual(
      given
        .filter((object) => object.kind === 'ServiceAccount')
        .map((object) => object.metadata.name)
        .sort(),
      [GATEWAY, FUNCTIONS, 'kopfexample'].sort(),
    );
  });

  const rbacOfCombinations: Array<{
    name: string;
    values: object;
    rbac: (placement: Placement) => Parameters<typeof causewayRbac>[1];
  }> = [
    {
      name: 'serving admission webhooks (examples/17-admission)',
      values: ADMISSION,
      rbac: ({ gateway }) => ({
        module: 'examples/17-admission/operator.ts',
        flags: ['--webhook-certificates', `${gateway}/${WEBHOOK_CERTIFICATES}`],
      }),
    },
    {
      name: 'signing with a Secret made beforehand',
      values: EXISTING_SIGNING_KEYS,
      rbac: () => ({ signingKeys: EXISTING_KEYS }),
    },
    {
      name: 'serving FunctionService objects',
      values: FUNCTION_SERVICE_OBJECTS,
      // None in the namespace yet: the Secrets the objects will name are the chart's, added below.
      rbac: ({ gateway }) => ({ flags: ['--function-services', gateway] }),
    },
  ];
  for (const { name, values, rbac } of rbacOfCombinations) {
    it(`grants what \`causeway rbac\` prints for the gateway it runs ${name}`, async (t) => {
      const placement = await testPlacement(t);
      const expected = parseYaml(await causewayRbac(placement, rbac(placement)));
      const rendered = await template(t, placement, values);
      // As by default: the function service's certificate Secret, which `causeway rbac --module` cannot name.
      const functionTls = grants([
        { apiGroups: [''], resources: ['secrets'], resourceNames: [FUNCTION_TLS], verbs: ['get', 'update'] },
      ]);
      assert.deepEqual(
        grants(rulesOf(rendered, 'Role')),
        [...new Set([...grants(rulesOf(expected, 'Role')), ...functionTls])].sort(),
      );
      assert.deepEqual(grants(rulesOf(rendered, 'ClusterRole')), grants(rulesOf(expected, 'ClusterRole')));
    });
  }

  const combinations: Array<{
    name: string;
    values: (placement: Placement) => Promise<object> | object;
    expected: (namespace: string) => string[];
  }> = [
    { name: 'the default values', values: () => ({}), expected: DEFAULT_OBJECTS },
    {
      name: 'two function services, one applying children',
      values: () => TWO_FUNCTION_SERVICES,
      expected: (namespace) =>
        [
          ...DEFAULT_OBJECTS(namespace),
          ...SERVICE_ACCOUNT_OBJECTS('apps'),
          'serviceaccount/apps-functions',
          'deployment.apps/apps-functions',
          'service/apps-functions',
        ].sort(),
    },
    {
      name: "the gateway's settings, without a PodDisruptionBudget",
      values: () => GATEWAY_SETTINGS,
      expected: (namespace) =>
        DEFAULT_OBJECTS(namespace).filter((name) => !name.startsWith('poddisruptionbudget')),
    },
    {
      name: 'metrics and a ServiceMonitor (its CRD applied by this test)',
      values: () => METRICS,
      expected: (namespace) =>
        [
          ...DEFAULT_OBJECTS(namespace),
          'service/causeway-gateway-metrics',
          'servicemonitor.monitoring.coreos.com/causeway-gateway',
        ].sort(),
    },
    {
      name: 'admission webhooks',
      values: () => ADMISSION,
      expected: ADMISSION_OBJECTS,
    },
    {
      name: "admission webhooks, the NetworkPolicy naming the apiserver's addresses",
      values: () => ADMISSION_NETWORK_POLICY,
      expected: ADMISSION_OBJECTS,
    },
    {
      name: "admission webhooks answering only the apiserver's client certificate",
      values: () => ({ ...ADMISSION, admission: { enabled: true, clientCA: { pem: 'PEM' } } }),
      expected: (namespace) =>
        [...ADMISSION_OBJECTS(namespace), 'configmap/causeway-gateway-webhook-client-ca'].sort(),
    },
    {
      name: 'a signing-keys Secret made beforehand',
      values: () => EXISTING_SIGNING_KEYS,
      expected: DEFAULT_OBJECTS,
    },
    {
      name: 'FunctionService objects (their CRD applied by this test)',
      values: () => FUNCTION_SERVICE_OBJECTS,
      expected: (namespace) =>
        [
          ...DEFAULT_OBJECTS(namespace).filter((name) => name !== 'configmap/causeway-function-scopes'),
          'functionservice.causeway.dev/kopfexample',
        ].sort(),
    },
    {
      name: 'every optional setting at once',
      values: () => EVERYTHING,
      expected: (namespace) =>
        [
          ...ADMISSION_OBJECTS(namespace).filter(
            (name) =>
              !['configmap/causeway-function-scopes', `poddisruptionbudget.policy/${GATEWAY}`].includes(name),
          ),
          'functionservice.causeway.dev/kopfexample',
          'service/causeway-gateway-metrics',
          'servicemonitor.monitoring.coreos.com/causeway-gateway',
        ].sort(),
    },
    {
      name: 'the RBAC of `causeway rbac` as rbac.manifest',
      values: async (placement) => ({ rbac: { manifest: await causewayRbac(placement) } }),
      // `causeway rbac` names a service's Role after its account's namespace too.
      expected: (namespace) =>
        [
          ...withoutServiceAccount(DEFAULT_OBJECTS(namespace)),
          ...SERVICE_ACCOUNT_OBJECTS('kopfexample', `kopfexample-${namespace}`),
        ].sort(),
    },
  ];
  for (const { name, values, expected } of combinations) {
    it(`passes kubectl apply --dry-run=server under the restricted pod security standard with ${name}`, async (t) => {
      const placement = await restrictedPlacement(t);
      const objects = await template(t, placement, await values(placement));
      assert.deepEqual(await dryRun(objects), expected(placement.gateway));
    });
  }

  it('renders each setting where it belongs', async (t) => {
    const namespace = 'operators';
    const placement = { gateway: namespace, objects: 'team-a' };
    const two = await template(t, placement, TWO_FUNCTION_SERVICES);
    const gatewayArgs = onlyContainer(find<Deployment>(two, 'Deployment', GATEWAY)).args ?? [];
    assert.deepEqual(
      gatewayArgs.filter((_, index) =>
        ['--functions', '--function-tls'].includes(gatewayArgs[index - 1] ?? ''),
      ),
      [
        'kopfexample=https://kopfexample-functions.$(POD_NAMESPACE).svc:8080',
        'kopfexample=$(POD_NAMESPACE)/kopfexample-functions-tls',
        'apps=https://apps-functions.$(POD_NAMESPACE).svc:8080',
        'apps=$(POD_NAMESPACE)/apps-functions-tls',
      ],
    );
    const apps = find<Deployment>(two, 'Deployment', 'apps-functions');
    assert.equal(apps.spec.replicas, 2);
    assert.deepEqual(onlyContainer(apps).env, [{ name: 'LOG_LEVEL', value: 'debug' }]);
    assert.deepEqual(onlyContainer(apps).resources, TWO_FUNCTION_SERVICES.functionServices[1]?.resources);
    assert.deepEqual(
      parseYaml(
        (find(two, 'ConfigMap', 'causeway-function-scopes').data as Record<string, string>)['apps.yaml'] ??
          '',
      )[0],
      {
        resources: ['kopfexamples.kopf.dev'],
        children: ['deployments.apps'],
      },
    );
    const role = rulesOf(two, 'Role');
    assert.ok(
      role.some(
        (rule) => rule.resources?.includes('deployments') && rule.verbs.join() === 'create,get,patch',
      ),
    );
    assert.ok(
      role.some(
        (rule) => rule.resourceNames?.includes('apps-functions-tls') && rule.verbs.join() === 'get,update',
      ),
    );

    const withMetrics = await template(t, placement, METRICS);
    const metricsGateway = onlyContainer(find<Deployment>(withMetrics, 'Deployment', GATEWAY));
    assert.deepEqual(
      (metricsGateway.args ?? []).slice((metricsGateway.args ?? []).indexOf('--metrics'))?.slice(0, 2),
      ['--metrics', '0.0.0.0:9090'],
    );
    assert.ok(metricsGateway.ports?.some((port) => port.name === 'metrics' && port.containerPort === 9090));
    const metricsService = find<Service>(withMetrics, 'Service', 'causeway-gateway-metrics');
    assert.deepEqual(
      metricsService.spec.ports.map((port) => [port.port, port.targetPort]),
      [[9090, 'metrics']],
    );
    const monitor = find<
      Manifest & {
        spec: { selector: { matchLabels: Record<string, string> }; endpoints: Array<{ port: string }> };
      }
    >(withMetrics, 'ServiceMonitor', GATEWAY);
    for (const [label, value] of Object.entries(monitor.spec.selector.matchLabels)) {
      assert.equal(metricsService.metadata.labels?.[label], value, `ServiceMonitor selects label ${label}`);
    }
    assert.deepEqual(
      monitor.spec.endpoints.map((endpoint) => endpoint.port),
      ['metrics'],
    );

    const settings = await template(t, placement, GATEWAY_SETTINGS);
    const gateway = find<Deployment>(settings, 'Deployment', GATEWAY);
    assert.equal(gateway.spec.replicas, 3);
    assert.deepEqual((onlyContainer(gateway).args ?? []).slice(-2), ['--priority', '10']);
    assert.deepEqual(onlyContainer(gateway).env?.at(-1), { name: 'MALLOC_ARENA_MAX', value: '4' });

    // The Secret made beforehand: the gateway keeps its keys there, the services mount its ConfigMap.
    const existing = await template(t, placement, EXISTING_SIGNING_KEYS);
    const existingArgs = onlyContainer(find<Deployment>(existing, 'Deployment', GATEWAY)).args ?? [];
    assert.equal(flagValue(existingArgs, '--signing-keys'), `$(POD_NAMESPACE)/${EXISTING_KEYS}`);
    const functionsKeys = find<Deployment>(
      existing,
      'Deployment',
      FUNCTIONS,
    ).spec.template.spec.volumes?.find((volume) => volume.name === 'signing-keys');
    assert.deepEqual(functionsKeys?.configMap, { name: EXISTING_KEYS });
    assert.equal(
      existing.filter((object) => object.kind === 'Secret').length,
      0,
      'the chart makes no Secret of keys',
    );

    // The gateway serves the namespaces given, never its own: a Role there for what it watches.
    assert.deepEqual(
      gatewayArgs.filter((_, index) => gatewayArgs[index - 1] === '--namespace'),
      ['team-a'],
    );
    assert.ok(grantsIn(two, 'team-a').some((grant) => grant.includes('kopfexamples')));
    assert.ok(!grantsIn(two, namespace).some((grant) => grant.includes('kopfexamples')));
    const served = await template(t, placement, { namespaces: ['team-a', 'team-b'] });
    const servedArgs = onlyContainer(find<Deployment>(served, 'Deployment', GATEWAY)).args ?? [];
    assert.deepEqual(
      servedArgs.filter((_, index) => servedArgs[index - 1] === '--namespace'),
      ['team-a', 'team-b'],
    );
    assert.deepEqual(grantsIn(served, 'team-b'), grantsIn(served, 'team-a'));

    // By default, the NetworkPolicy lets no pod in and the gateway out to DNS, its function services'
    // pods and the apiserver's ports only.
    const defaults = find<NetworkPolicy>(await template(t, placement), 'NetworkPolicy', GATEWAY);
    assert.deepEqual(defaults.spec.policyTypes, ['Ingress', 'Egress']);
    assert.deepEqual(defaults.spec.ingress, []);
    assert.deepEqual(
      (defaults.spec.egress ?? []).map((rule) => [rule.ports.map((port) => port.port), rule.to]),
      [
        [[53, 53], undefined],
        [
          [8080],
          [
            {
              podSelector: {
                matchLabels: {
                  'app.kubernetes.io/component': 'functions',
                  'app.kubernetes.io/instance': RELEASE,
                },
              },
            },
          ],
        ],
        [[443, 6443], undefined],
      ],
    );
    // With admission and metrics: the webhook port from the apiserver's addresses, the metrics from
    // the monitoring namespace only; extra egress as given.
    const everything = await template(t, placement, {
      ...EVERYTHING,
      networkPolicy: {
        apiserverCIDRs: ['10.0.0.1/32'],
        extraEgress: [{ ports: [{ port: 4317, protocol: 'TCP' }] }],
      },
    });
    const policy = find<NetworkPolicy>(everything, 'NetworkPolicy', GATEWAY);
    assert.deepEqual(
      policy.spec.ingress.map((rule) => [rule.ports.map((port) => port.port), rule.from]),
      [
        [['webhooks'], [{ ipBlock: { cidr: '10.0.0.1/32' } }]],
        [
          ['metrics'],
          [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
        ],
      ],
    );
    const egress = (policy.spec as { egress: Array<{ ports: Array<{ port: number }>; to?: object[] }> })
      .egress;
    assert.deepEqual(egress.at(-2)?.to, [{ ipBlock: { cidr: '10.0.0.1/32' } }]);
    assert.deepEqual(egress.at(-1), { ports: [{ port: 4317, protocol: 'TCP' }] });
    const open = await template(t, placement, { networkPolicy: { enabled: false } });
    assert.equal(open.filter((object) => object.kind === 'NetworkPolicy').length, 0);

    // A client CA: the gateway answers only the clients whose certificate it signed, from the PEM
    // given, or from a ConfigMap or a Secret made beforehand.
    const clientCa = (values: object) =>
      template(t, placement, { ...ADMISSION, admission: { enabled: true, clientCA: values } });
    for (const [values, volume] of [
      [
        { pem: 'PEM' },
        {
          configMap: {
            name: 'causeway-gateway-webhook-client-ca',
            items: [{ key: 'ca.crt', path: 'ca.crt' }],
          },
        },
      ],
      [
        { existingConfigMap: 'apiserver-ca', key: 'ca.pem' },
        { configMap: { name: 'apiserver-ca', items: [{ key: 'ca.pem', path: 'ca.crt' }] } },
      ],
      [
        { existingSecret: 'apiserver-ca' },
        { secret: { secretName: 'apiserver-ca', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      ],
    ] as const) {
      const rendered = await clientCa(values);
      const deployment = find<Deployment>(rendered, 'Deployment', GATEWAY);
      const caArgs = onlyContainer(deployment).args ?? [];
      const file = flagValue(caArgs, '--webhook-client-ca') ?? '';
      assert.equal(file, '/etc/causeway/webhook-client-ca/ca.crt');
      assert.deepEqual(
        deployment.spec.template.spec.volumes?.find((each) => each.name === 'webhook-client-ca'),
        { name: 'webhook-client-ca', ...volume },
      );
    }
    const pem = await clientCa({ pem: 'PEM' });
    assert.deepEqual(find(pem, 'ConfigMap', 'causeway-gateway-webhook-client-ca').data, { 'ca.crt': 'PEM' });
    const noCa = onlyContainer(
      find<Deployment>(await template(t, placement, ADMISSION), 'Deployment', GATEWAY),
    );
    assert.equal((noCa.args ?? []).includes('--webhook-client-ca'), false);

    // FunctionService objects instead of --functions: no scopes to mount, each in its object.
    const asObjects = await template(t, placement, FUNCTION_SERVICE_OBJECTS);
    const objectsGateway = find<Deployment>(asObjects, 'Deployment', GATEWAY);
    const objectsArgs = onlyContainer(objectsGateway).args ?? [];
    assert.equal(flagValue(objectsArgs, '--function-services'), '$(POD_NAMESPACE)');
    for (const flag of ['--functions', '--function-scope', '--function-tls']) {
      assert.ok(!objectsArgs.includes(flag), `no ${flag}`);
    }
    assert.equal(objectsGateway.spec.template.spec.volumes, undefined);
    assert.deepEqual(find<Manifest & { spec: object }>(asObjects, 'FunctionService', 'kopfexample').spec, {
      url: `https://${FUNCTIONS}.${namespace}.svc:8080`,
      tls: { secretName: FUNCTION_TLS },
      scope: { resources: ['kopfexamples.kopf.dev'] },
    });
  });

  /**
   * `helm install` of the chart into `namespace` with `values`, uninstalled after `t`: its notes, and
   * the objects it made, each checked to be there as the apiserver has it.
   */
  async function installed(
    t: TestContext,
    { gateway: namespace, objects: served }: Placement,
    values: object,
  ): Promise<{ notes: string; objects: Manifest[] }> {
    t.after(async () => {
      // The ClusterRole and its binding outlive the namespace otherwise.
      await helm(['uninstall', RELEASE, '--namespace', namespace]);
    });
    const file = await valuesFile(t, { namespaces: [served], ...values });
    const notes = await helmOk(['install', RELEASE, CHART, '--namespace', namespace, '--values', file]);
    assert.match(notes, /STATUS: deployed/);
    const objects = parseYaml(await helmOk(['get', 'manifest', RELEASE, '--namespace', namespace])).filter(
      (object) => object !== null,
    );
    for (const object of objects) {
      const where = object.metadata.namespace ? ['--namespace', object.metadata.namespace] : [];
      await kubectlOk(['get', `${object.kind}/${object.metadata.name}`, ...where]);
    }
    return { notes, objects };
  }

  /**
   * No kubelet here: the tests run the two containers' commands, with the chart's arguments, the
   * gateway holding only a token of the chart's ServiceAccount. The bundled CLI, and that token's
   * kubeconfig, in a folder deleted after `t`.
   */
  async function asTheChartsAccount(t: TestContext, namespace: string) {
    const dir = await mkdtemp(join(tmpdir(), 'causeway-helm-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const cli = await bundleCli(join(dir, 'cli'));
    const kubeconfig = join(dir, 'kubeconfig');
    await writeServiceAccountKubeconfig(kubeconfig, namespace, GATEWAY);
    return { dir, cli, kubeconfig };
  }

  it("installs for real with helm install, and its gateway, run as the chart's ServiceAccount, handles a KopfExample", async (t) => {
    const placement = await restrictedPlacement(t);
    const { gateway: namespace, objects: served } = placement;
    const { notes, objects } = await installed(t, placement, { metrics: { enabled: true } });
    assert.match(notes, new RegExp(`serving the\\s+objects of ${served} only`));
    assert.match(notes, new RegExp(`kopfexample: https://kopfexample-functions\\.${namespace}\\.svc:8080`));
    assert.deepEqual(
      objects.map(kubectlName).sort(),
      [...DEFAULT_OBJECTS(namespace), 'service/causeway-gateway-metrics'].sort(),
    );

    const { dir, cli, kubeconfig } = await asTheChartsAccount(t, namespace);
    const port = await freePort();
    const deployment = find<Deployment>(objects, 'Deployment', GATEWAY);
    const { args: containerArgs } = await withFreeLiveness(
      await withMountedScopes(onlyContainer(deployment).args ?? [], deployment, objects, dir),
    );
    // The metrics on a free loopback port too, instead of the container's 0.0.0.0:9090.
    const metrics = `127.0.0.1:${await freePort()}`;
    const gatewayArgs = inNamespace(
      withFlag(
        withFlag(containerArgs, '--functions', `kopfexample=https://127.0.0.1:${port}`),
        '--metrics',
        metrics,
      ),
      namespace,
    );
    const { args: functionsArgs, mount } = await withMountedCertificate(
      servedOnLoopback(onlyContainer(find<Deployment>(objects, 'Deployment', FUNCTIONS)).args ?? [], port),
      { namespace, name: FUNCTION_TLS },
      dir,
    );
    const { gateway, functions } = await startGatewayThenFunctions(t, {
      cli,
      gateway: { args: gatewayArgs, env: { KUBECONFIG: kubeconfig, POD_NAMESPACE: namespace } },
      functions: { args: functionsArgs },
      dir,
      beforeFunctions: mount,
    });

    const [example] = await applyFile(OBJECT, served);
    assert.ok(example);
    const path = `/apis/kopf.dev/v1/namespaces/${served}/kopfexamples/${example.metadata.name}`;
    const handled = await handledByDeployed(gateway, functions, path);
    assert.deepEqual(handled.status?.create_fn, { message: `hello ${example.metadata.name}` });
    // The metrics the Service causeway-gateway-metrics fronts, at the container port it targets.
    const scraped = await fetch(`http://${metrics}/metrics`);
    assert.equal(scraped.status, 200);
    assert.match(await scraped.text(), /^# (HELP|TYPE) /m);
    assert.deepEqual(problems(gateway.output()), [], gateway.output());
    assert.deepEqual(problems(functions.output()), [], functions.output());
  });

  it('installs for real with a signing-keys Secret made beforehand and FunctionService objects: the gateway signs with those keys, serves the objects, and helm uninstall leaves the Secret', async (t) => {
    const placement = await restrictedPlacement(t);
    const { gateway: namespace, objects: served } = placement;
    const values = { ...EXISTING_SIGNING_KEYS, ...FUNCTION_SERVICE_OBJECTS };
    const file = await valuesFile(t, { namespaces: [served], ...values });
    const install = ['install', RELEASE, CHART, '--namespace', namespace, '--values', file];
    // Refused, with nothing made, while the Secret is missing or is not a gateway's keys.
    const missing = await helm(install);
    assert.notEqual(missing.code, 0);
    assert.match(
      missing.stderr,
      new RegExp(
        `signingKeys.existingSecret: no Secret ${namespace}/${EXISTING_KEYS}: create it before installing`,
      ),
    );
    await kubectlOk([
      'create',
      'secret',
      'generic',
      EXISTING_KEYS,
      '-n',
      namespace,
      '--from-literal=other=x',
    ]);
    const notKeys = await helm(install);
    assert.notEqual(notKeys.code, 0);
    assert.match(notKeys.stderr, /has no key keys\.json: it is not a gateway's signing keys/);
    await kubectlOk(['delete', 'secret', EXISTING_KEYS, '-n', namespace]);
    const key = newKey(Date.now());
    await kubectlOk(
      ['apply', '-f', '-'],
      toYaml([
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: EXISTING_KEYS, namespace },
          stringData: { [PRIVATE_KEYS_FILE]: JSON.stringify([key]) },
        },
      ]),
    );

    const { notes, objects } = await installed(t, placement, values);
    assert.match(notes, new RegExp(`signs with the keys of the Secret ${EXISTING_KEYS}`));
    assert.deepEqual(
      objects.map(kubectlName).sort(),
      [
        ...DEFAULT_OBJECTS(namespace).filter((name) => name !== 'configmap/causeway-function-scopes'),
        'functionservice.causeway.dev/kopfexample',
      ].sort(),
    );

    const { dir, cli, kubeconfig } = await asTheChartsAccount(t, namespace);
    // The function service on a free loopback port, and its FunctionService naming it there (a
    // loopback URL, which the gateway refuses unless told otherwise).
    const port = await freePort();
    await kubectlOk([
      ...['patch', 'functionservice', 'kopfexample', '-n', namespace, '--type=merge'],
      ...['-p', JSON.stringify({ spec: { url: `https://127.0.0.1:${port}` } })],
    ]);
    const { args: containerArgs } = await withFreeLiveness(
      onlyContainer(find<Deployment>(objects, 'Deployment', GATEWAY)).args ?? [],
    );
    const gatewayArgs = inNamespace(containerArgs, namespace).concat('--allow-loopback-functions');
    const { args: functionsArgs, mount } = await withMountedCertificate(
      servedOnLoopback(onlyContainer(find<Deployment>(objects, 'Deployment', FUNCTIONS)).args ?? [], port),
      { namespace, name: FUNCTION_TLS },
      dir,
    );
    const { gateway, functions, published } = await startGatewayThenFunctions(t, {
      cli,
      gateway: { args: gatewayArgs, env: { KUBECONFIG: kubeconfig, POD_NAMESPACE: namespace } },
      functions: { args: functionsArgs },
      dir,
      beforeFunctions: mount,
    });
    // The keys it publishes, and signs with, are the Secret's: it made none of its own.
    assert.deepEqual(
      published.keys.map((each) => each.kid),
      [key.kid],
    );
    assert.deepEqual(await keptKeys(namespace, EXISTING_KEYS), [key.kid]);

    const [example] = await applyFile(OBJECT, served);
    assert.ok(example);
    const path = `/apis/kopf.dev/v1/namespaces/${served}/kopfexamples/${example.metadata.name}`;
    const handled = await handledByDeployed(gateway, functions, path);
    assert.deepEqual(handled.status?.create_fn, { message: `hello ${example.metadata.name}` });
    assert.deepEqual(problems(gateway.output()), [], gateway.output());
    assert.deepEqual(problems(functions.output()), [], functions.output());

    await helmOk(['uninstall', RELEASE, '--namespace', namespace]);
    assert.deepEqual(await keptKeys(namespace, EXISTING_KEYS), [key.kid]);
  });
});
