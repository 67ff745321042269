import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type {
  HandlerFilters,
  HandlerSpec,
  KubernetesObject,
  Outcome,
  ServiceScope,
} from '../../protocol/index.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import type { ServiceAccountName } from '../kube/client.ts';
import type { DiscoveredResource } from '../kube/discovery.ts';
import { writerOf } from '../kube/written-as.ts';
import { filterMiss } from '../reactor/filters.ts';
import { nameGenerated } from '../reactor/outcomes.ts';
import {
  type AnswerGuard,
  beyondPin,
  confineOutcomes,
  covers,
  NO_OBJECT_VERSION,
  narrowedToScope,
  parseScope,
  ScopeError,
  serviceAccountOf,
} from './scope.ts';

const resource = (plural: string, group: string, namespaced = true): DiscoveredResource =>
  ({
    plural,
    group,
    version: 'v1',
    kind: plural,
    namespaced,
    subresources: [],
  }) as unknown as DiscoveredResource;

const KINDS: Record<string, DiscoveredResource> = {
  'v1/ConfigMap': resource('configmaps', ''),
  'v1/Secret': resource('secrets', ''),
  'apps/v1/Deployment': resource('deployments', 'apps'),
  'kopf.dev/v1/KopfExample': resource('kopfexamples', 'kopf.dev'),
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': resource(
    'clusterrolebindings',
    'rbac.authorization.k8s.io',
    false,
  ),
};

const handled: KubernetesObject = {
  apiVersion: 'kopf.dev/v1',
  kind: 'KopfExample',
  metadata: { name: 'example', namespace: 'team-a', uid: 'uid-1' },
};

/**
 * An instance, as the gateway's guard (binding/scope-check.ts) is: its methods are its class's, not its
 * own. `objects` are what the API has, by `<plural>/<namespace>/<name>`; `read` what it was asked
 * (and as whom, when not as the gateway).
 */
class KnownKinds implements AnswerGuard {
  readonly identity = DEFAULT_IDENTITY;
  readonly objects = new Map<string, KubernetesObject>();
  readonly read: string[] = [];

  async resourceOf(apiVersion: string, kind: string): Promise<DiscoveredResource> {
    const found = KINDS[`${apiVersion}/${kind}`];
    if (!found) throw new Error(`no ${kind}`);
    return found;
  }

  async current(resource: DiscoveredResource, namespace: string, name: string, account?: ServiceAccountName) {
    const key = `${resource.plural}/${namespace}/${name}`;
    this.read.push(account ? `${key} as ${account.namespace}/${account.name}` : key);
    return this.objects.get(key);
  }
}
const guard = new KnownKinds();

const scope: ServiceScope = { resources: ['kopfexamples.kopf.dev'], children: ['configmaps'] };
/** `null`: no pin (a gateway run with --unscoped). */
const confine = (outcome: Outcome, pin: ServiceScope | null = scope) =>
  confineOutcomes({ handler: outcome }, pin ?? undefined, guard, handled);
const configMap = (metadata: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'settings', ...metadata },
});

describe('parseScope', () => {
  it('takes a scope with its lists, the ServiceAccount and Secrets of its children’s pods, and the account to write as', () => {
    const given = {
      resources: ['kopfexamples.kopf.dev'],
      admission: ['pods'],
      children: ['deployments.apps'],
      namespaces: ['team-*', '!team-x'],
      serviceAccount: 'builder',
      secrets: ['registry', 'db.credentials'],
      impersonate: 'team-a/kopf.writer',
    };
    assert.deepEqual(parseScope(given, 'scope'), given);
  });

  it('refuses a ServiceAccount or a Secret that is not an object’s name', () => {
    assert.throws(
      () => parseScope({ resources: [], serviceAccount: 'a/b' }, 'spec.scope'),
      /spec\.scope\.serviceAccount is "a\/b", which is not the name of a ServiceAccount/,
    );
    assert.throws(() => parseScope({ resources: [], serviceAccount: ['a'] }, 's'), /s\.serviceAccount/);
    assert.throws(
      () => parseScope({ resources: [], secrets: ['Keys'] }, 's'),
      /s\.secrets has "Keys", which is not names of Secrets/,
    );
    assert.throws(() => parseScope({ resources: [], secrets: 'keys' }, 's'), /s\.secrets must be a list/);
  });

  it('refuses an account to write as that is not <namespace>/<name>, saying what it got', () => {
    for (const impersonate of ['writer', 'a/b/c', 'Team/writer', 'team/', '/writer', 'team/-writer', 7]) {
      assert.throws(
        () => parseScope({ resources: [], impersonate }, 'spec.scope'),
        new RegExp(
          `spec\\.scope\\.impersonate is ${JSON.stringify(impersonate).replace(/[.*/]/g, '\\$&')}, not a ServiceAccount as <namespace>/<name>`,
        ),
      );
    }
  });

  it('refuses unknown fields, a missing resources list and malformed names, saying where', () => {
    assert.throws(() => parseScope({ resources: [], verbs: ['*'] }, 'spec.scope'), /spec\.scope has "verbs"/);
    assert.throws(() => parseScope({ children: [] }, 'spec.scope'), /spec\.scope\.resources is missing/);
    assert.throws(() => parseScope({ resources: ['Pods'] }, 's'), /s\.resources has "Pods"/);
    assert.throws(() => parseScope({ resources: ['a/b'] }, 's'), ScopeError);
    assert.throws(() => parseScope({ resources: [], namespaces: ['a b'] }, 's'), /s\.namespaces/);
    assert.throws(() => parseScope(JSON.parse('{"resources":[],"__proto__":{}}'), 's'), /has "__proto__"/);
    assert.throws(() => parseScope({ resources: Array(257).fill('pods') }, 's'), /at most 256/);
  });
});

describe('covers', () => {
  it('names a resource by plural and group, or all with *', () => {
    assert.ok(covers(['kopfexamples.kopf.dev'], resource('kopfexamples', 'kopf.dev')));
    assert.ok(covers(['configmaps'], resource('configmaps', '')));
    assert.ok(!covers(['configmaps'], resource('configmaps', 'example.com')));
    assert.ok(covers(['*'], resource('secrets', '')));
    assert.ok(!covers(undefined, resource('secrets', '')));
  });
});

describe('beyondPin', () => {
  it('names what a declared scope asks beyond the pin, but namespaces', () => {
    const pin = { resources: ['kopfexamples.kopf.dev'], children: ['configmaps'], namespaces: ['team-a'] };
    assert.deepEqual(beyondPin({ resources: ['kopfexamples.kopf.dev'], namespaces: ['team-a'] }, pin), []);
    assert.deepEqual(
      beyondPin(
        { resources: ['kopfexamples.kopf.dev', 'secrets'], admission: ['pods'], children: ['configmaps'] },
        pin,
      ),
      ['resources: secrets', 'admission: pods'],
    );
    // A pin's narrowing leaves the service fewer objects, whatever it declared.
    assert.deepEqual(beyondPin({ resources: ['kopfexamples.kopf.dev'] }, pin), []);
    assert.deepEqual(beyondPin({ resources: ['secrets'], children: ['pods'] }, { resources: ['*'] }), [
      'children: pods',
    ]);
  });

  it('names Secrets the pin does not give, and a ServiceAccount other than the pin’s', () => {
    const pin = { resources: ['*'], secrets: ['registry'], serviceAccount: 'builder' };
    assert.deepEqual(beyondPin({ resources: [], secrets: ['registry'], serviceAccount: 'builder' }, pin), []);
    assert.deepEqual(
      beyondPin({ resources: [], secrets: ['registry', 'keys'], serviceAccount: 'admin' }, pin),
      ['secrets: keys', 'serviceAccount: admin'],
    );
    // Declaring none asks for nothing; declaring one asks for it, even default.
    assert.deepEqual(beyondPin({ resources: [] }, pin), []);
    assert.deepEqual(beyondPin({ resources: [], serviceAccount: 'default' }, pin), [
      'serviceAccount: default',
    ]);
    assert.deepEqual(beyondPin({ resources: [], serviceAccount: 'default' }, { resources: [] }), []);
  });

  it('names an account to write as other than the one the pin names, or when it names none', () => {
    const pin = { resources: ['*'], impersonate: 'shop/shipper' };
    assert.deepEqual(beyondPin({ resources: [], impersonate: 'shop/shipper' }, pin), []);
    assert.deepEqual(beyondPin({ resources: [] }, pin), []);
    assert.deepEqual(beyondPin({ resources: [], impersonate: 'kube-system/admin' }, pin), [
      'impersonate: kube-system/admin',
    ]);
    assert.deepEqual(beyondPin({ resources: [], impersonate: 'shop/shipper' }, { resources: ['*'] }), [
      'impersonate: shop/shipper',
    ]);
  });
});

describe('serviceAccountOf', () => {
  it("is the account the scope names, else one of the service's name in the namespace given", () => {
    const scoped = { resources: [], impersonate: 'shop/shipper' };
    assert.deepEqual(serviceAccountOf('shipping', scoped, 'ops'), { namespace: 'shop', name: 'shipper' });
    assert.deepEqual(serviceAccountOf('shipping', { resources: [] }, 'ops'), {
      namespace: 'ops',
      name: 'shipping',
    });
    assert.deepEqual(serviceAccountOf('shipping', undefined, 'ops'), { namespace: 'ops', name: 'shipping' });
  });
});

describe('confineOutcomes', () => {
  it('makes an applied object a child of the handled object', async () => {
    const { handler } = await confine({ status: 'success', apply: [configMap()] });
    assert.deepEqual(handler?.apply?.[0]?.metadata.ownerReferences, [
      {
        apiVersion: 'kopf.dev/v1',
        kind: 'KopfExample',
        name: 'example',
        uid: 'uid-1',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
  });

  it('keeps a child owned by the handled object, and refuses one left unowned (ownerReferences: [])', async () => {
    const owned = configMap({ ownerReferences: [{ uid: 'uid-1' }] });
    assert.deepEqual((await confine({ status: 'success', apply: [owned] })).handler?.apply, [
      configMap({ ownerReferences: [{ uid: 'uid-1' }], resourceVersion: NO_OBJECT_VERSION }),
    ]);
    await assert.rejects(
      confine({ status: 'success', apply: [configMap({ ownerReferences: [] })] }),
      /handler "handler": apply\[0\]: ConfigMap settings has ownerReferences: \[\], but every child is owned by the handled object/,
    );
  });

  it('reads the object a named child would be: new, it is made only if none is there by the write', async () => {
    guard.read.length = 0;
    const { handler } = await confine({ status: 'success', apply: [configMap()] });
    assert.deepEqual(guard.read, ['configmaps/team-a/settings']);
    assert.equal(handler?.apply?.[0]?.metadata.resourceVersion, NO_OBJECT_VERSION);
  });

  it('updates a child the handled object owns over the version read, so a change meanwhile fails the write', async () => {
    const ours = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'settings',
        namespace: 'team-a',
        uid: 'c',
        resourceVersion: '42',
        ownerReferences: [{ uid: 'uid-1' }],
      },
    };
    guard.objects.set('configmaps/team-a/settings', ours);
    try {
      const { handler } = await confine({ status: 'success', apply: [configMap({ data: { a: 'b' } })] });
      assert.equal(handler?.apply?.[0]?.metadata.resourceVersion, '42');
    } finally {
      guard.objects.clear();
    }
  });

  it('refuses to change an object the handled object does not own, saying which', async () => {
    const owners = [undefined, [], [{ uid: 'another' }]];
    for (const ownerReferences of owners) {
      const theirs = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: 'settings',
          namespace: 'team-a',
          uid: 'c',
          resourceVersion: '42',
          ...(ownerReferences ? { ownerReferences } : {}),
        },
      };
      guard.objects.set('configmaps/team-a/settings', theirs);
      try {
        await assert.rejects(
          confine({ status: 'success', apply: [configMap()] }),
          /apply\[0\]: ConfigMap settings exists and is not owned by the handled object: a service may make objects, and change its own children only/,
          JSON.stringify(ownerReferences),
        );
      } finally {
        guard.objects.clear();
      }
    }
  });

  it('leaves a child given only a generateName unread: the reactor names it later, from the handled object', async () => {
    guard.read.length = 0;
    const generated = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'settings-' } };
    const { handler } = await confine({ status: 'success', apply: [generated] });
    assert.deepEqual(guard.read, []);
    assert.equal(handler?.apply?.[0]?.metadata.resourceVersion, undefined);
  });

  it('refuses a workload whose pods reach beyond the scope, naming the child, the path and the rule', async () => {
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: {
        template: {
          spec: { serviceAccountName: 'causeway-gateway', containers: [{ name: 'c', image: 'i' }] },
        },
      },
    };
    const pin = { resources: ['kopfexamples.kopf.dev'], children: ['deployments.apps'] };
    await assert.rejects(
      confine({ status: 'success', apply: [deployment] }, pin),
      /^ScopeError: handler "handler": apply\[0\]: Deployment web: spec\.template\.spec\.serviceAccountName is causeway-gateway; its scope allows default$/,
    );
    const privileged = structuredClone(deployment);
    privileged.spec.template.spec = {
      serviceAccountName: 'builder',
      containers: [{ name: 'c', image: 'i', securityContext: { privileged: true } } as never],
    };
    await assert.rejects(
      confine({ status: 'success', apply: [privileged] }, pin),
      /Deployment web: spec\.template\.spec\.serviceAccountName is builder; its scope allows default \(and 1 more\)/,
    );
    await assert.rejects(
      confine({ status: 'success', apply: [privileged] }, { ...pin, serviceAccount: 'builder' }),
      /Deployment web: spec\.template\.spec\.containers\[0\]\.securityContext\.privileged is true; Pod Security baseline forbids privileged containers$/,
    );
    const { handler } = await confine(
      { status: 'success', apply: [deployment] },
      { ...pin, serviceAccount: 'causeway-gateway' },
    );
    assert.equal(handler?.apply?.[0]?.kind, 'Deployment', 'the ServiceAccount its scope names');
  });

  it('refuses a kind outside its children, a cluster-scoped one, another namespace, another owner', async () => {
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' } };
    await assert.rejects(
      confine({ status: 'success', apply: [secret] }),
      /Secret s is a secrets, not one of the kinds its scope lets it apply \(children: configmaps\)/,
    );
    const binding = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'b' },
    };
    await assert.rejects(
      confine({ status: 'success', apply: [binding] }, { resources: ['*'], children: ['*'] }),
      /ClusterRoleBinding b is cluster-scoped/,
    );
    await assert.rejects(
      confine({ status: 'success', apply: [configMap({ namespace: 'kube-system' })] }),
      /is in namespace kube-system: children go to the object's own, team-a/,
    );
    await assert.rejects(
      confine({ status: 'success', apply: [configMap({ ownerReferences: [{ uid: 'another' }] })] }),
      /names an owner other than the handled object/,
    );
  });

  it('refuses a patch of finalizers, owners, managed fields or the gateway’s record, scoped or not', async () => {
    const patches = [
      [{ metadata: { finalizers: [] } }, /metadata\.finalizers/],
      [{ metadata: { ownerReferences: null } }, /metadata\.ownerReferences/],
      [{ metadata: { managedFields: [] } }, /metadata\.managedFields/],
      [{ metadata: { annotations: { 'causeway.dev/state': '{}' } } }, /the annotation causeway\.dev\/state/],
      [{ status: { causeway: null } }, /status\.causeway/],
    ] as const;
    for (const [patch, reason] of patches) {
      for (const pin of [scope, null]) {
        await assert.rejects(confine({ status: 'success', patch }, pin), reason);
      }
    }
    const sub: Outcome = {
      status: 'success',
      subhandlers: { inner: { status: 'success', patch: patches[0][0] } },
    };
    await assert.rejects(
      confine(sub),
      /handler "handler", sub-handler "inner": its patch may not change metadata\.finalizers/,
    );
    const fine = {
      metadata: { labels: { a: 'b' }, annotations: { 'example.com/x': 'y' } },
      status: { mine: 1 },
    };
    assert.deepEqual((await confine({ status: 'success', patch: fine })).handler?.patch, fine);
  });

  it("refuses a patch that sets another service's result, or replaces metadata, its annotations or the status", async () => {
    // `theirs_fn` is an id another service binds on the resource: its result is at status.theirs_fn.
    const others = new Set(['theirs_fn']);
    const confineBeside = (patch: Record<string, unknown>) =>
      confineOutcomes({ handler: { status: 'success', patch } }, scope, guard, handled, others);
    const refused = [
      [{ status: { theirs_fn: { message: 'forged' } } }, /status\.theirs_fn \(another service's result\)/],
      [{ status: { theirs_fn: null } }, /status\.theirs_fn/],
      [{ status: null }, /status as a whole \(it would wipe the gateway's record/],
      [{ metadata: null }, /metadata as a whole/],
      [{ metadata: { annotations: null } }, /metadata\.annotations as a whole/],
      [{ metadata: { annotations: 'none' } }, /metadata\.annotations as a whole/],
    ] as const;
    for (const [patch, reason] of refused) await assert.rejects(confineBeside(patch), reason);
    await assert.rejects(
      confineOutcomes(
        {
          handler: { status: 'success', subhandlers: { inner: { status: 'success', patch: refused[0][0] } } },
        },
        undefined,
        guard,
        handled,
        others,
      ),
      /handler "handler", sub-handler "inner": its patch may not change status\.theirs_fn/,
      'unscoped too, and from a sub-handler',
    );
    const own = {
      status: { mine_fn: { done: true }, phase: 'Ready' },
      metadata: { annotations: { a: null } },
    };
    assert.deepEqual(
      (await confineBeside(own)).handler?.patch,
      own,
      'its own keys, and removing one annotation',
    );
  });

  it('lets events be about the handled object or a child kind in its namespace, and nothing else', async () => {
    const event = (about: Record<string, string>) => ({
      type: 'Normal' as const,
      reason: 'R',
      message: 'm',
      about: { apiVersion: 'v1', ...about } as never,
    });
    const self = event({ apiVersion: 'kopf.dev/v1', kind: 'KopfExample', name: 'example' });
    const child = event({ kind: 'ConfigMap', name: 'settings', namespace: 'team-a' });
    assert.ok((await confine({ status: 'success', events: [self, child] })).handler);
    await assert.rejects(
      confine({ status: 'success', events: [event({ kind: 'ConfigMap', name: 'c', namespace: 'team-b' })] }),
      /an event about ConfigMap team-b\/c, which is neither the handled object nor one of its children/,
    );
    await assert.rejects(
      confine({ status: 'success', events: [event({ kind: 'Secret', name: 's' })] }),
      ScopeError,
    );
    // Unscoped (--unscoped): today's events about any object.
    assert.ok(
      (await confine({ status: 'success', events: [event({ kind: 'Secret', name: 's' })] }, null)).handler,
    );
  });

  it("names the handled object's namespace in an event about it or a child that names none, which the API would put in default", async () => {
    const about = (kind: string, name: string, apiVersion = 'v1') => ({
      type: 'Normal' as const,
      reason: 'R',
      message: 'm',
      about: { apiVersion, kind, name },
    });
    const { handler } = await confine({
      status: 'success',
      events: [about('KopfExample', 'example', 'kopf.dev/v1'), about('ConfigMap', 'settings')],
    });
    assert.deepEqual(
      handler?.events?.map((event) => event.about?.namespace),
      ['team-a', 'team-a'],
    );
  });
});

describe('confineOutcomes with an account to write as (--impersonate)', () => {
  const writer = { namespace: 'team-a', name: 'kopfexample' };
  const event = { type: 'Normal' as const, reason: 'Made', message: 'made it' };

  it("marks its children and events, its sub-handlers' too, to be written as the account, and nothing else", async () => {
    const { handler } = await confineOutcomes(
      {
        handler: {
          status: 'success',
          patch: { spec: { field: 1 } },
          apply: [configMap()],
          events: [event],
          subhandlers: { sub: { status: 'success', apply: [configMap({ name: 'other' })], events: [event] } },
        },
      },
      scope,
      guard,
      handled,
      new Set(),
      writer,
    );
    assert.deepEqual(writerOf(handler?.apply?.[0] as object), writer);
    assert.deepEqual(writerOf(handler?.events?.[0] as object), writer);
    assert.deepEqual(writerOf(handler?.subhandlers?.sub?.apply?.[0] as object), writer);
    assert.deepEqual(writerOf(handler?.subhandlers?.sub?.events?.[0] as object), writer);
    assert.equal(
      writerOf(handler?.patch as object),
      undefined,
      "the handled object's patch stays the gateway's",
    );
  });

  it('keeps the mark through the copies a cycle makes, and never sends it', async () => {
    const { handler } = await confineOutcomes(
      { handler: { status: 'success', apply: [configMap({ name: undefined, generateName: 'settings-' })] } },
      scope,
      guard,
      handled,
      new Set(),
      writer,
    );
    const [named] = nameGenerated(handler?.apply ?? [], 'uid-1/handler');
    assert.deepEqual(writerOf({ ...(named as object) }), writer);
    assert.equal(Object.getOwnPropertySymbols(named).length, 1, 'marked');
    const sent = JSON.parse(JSON.stringify(named));
    assert.deepEqual(sent, Object.fromEntries(Object.entries(named as object)), 'JSON leaves the mark out');
    assert.equal(writerOf(sent), undefined);
  });

  it("reads the child it would change as the account too, not with the gateway's rights", async () => {
    guard.read.length = 0;
    await confineOutcomes(
      { handler: { status: 'success', apply: [configMap()] } },
      scope,
      guard,
      handled,
      new Set(),
      writer,
    );
    assert.deepEqual(guard.read, ['configmaps/team-a/settings as team-a/kopfexample']);
  });

  it("marks nothing without an account: every write is the gateway's", async () => {
    const { handler } = await confine({ status: 'success', apply: [configMap()], events: [event] });
    assert.equal(writerOf(handler?.apply?.[0] as object), undefined);
    assert.equal(writerOf(handler?.events?.[0] as object), undefined);
  });
});

describe('narrowedToScope', () => {
  const handler = (filters?: HandlerFilters): HandlerSpec => ({
    id: 'h',
    kind: 'create',
    resource: { name: 'kopfexamples' },
    ...(filters ? { filters } : {}),
  });

  it('gives each handler the pin’s namespaces, whatever the service declared', () => {
    const pin = { resources: ['*'], namespaces: ['team-*'] };
    assert.deepEqual(narrowedToScope([handler(), handler({ labels: { a: 'b' }, namespaces: ['*'] })], pin), [
      handler({ namespaces: ['team-*'] }),
      handler({ labels: { a: 'b' }, namespaces: ['team-*'] }),
    ]);
  });

  it('leaves a service without a namespace narrowing no namespaces of its own', () => {
    assert.deepEqual(narrowedToScope([handler({ namespaces: ['x'] }), handler()], { resources: ['*'] }), [
      handler({}),
      handler(),
    ]);
    assert.deepEqual(narrowedToScope([handler({ namespaces: ['x'] })], undefined), [handler({})]);
  });
});

describe("the gateway's own namespace", () => {
  const handler: HandlerSpec = { id: 'h', kind: 'create', resource: { name: 'kopfexamples' } };
  const inNamespace = (namespace: string): KubernetesObject => ({
    ...handled,
    metadata: { ...handled.metadata, namespace },
  });

  it('is seen by no handler, pinned, narrowed or unscoped', () => {
    const [open] = narrowedToScope([handler], { resources: ['*'] }, 'causeway-system');
    const [narrowed] = narrowedToScope(
      [handler],
      { resources: ['*'], namespaces: ['team-*'] },
      'causeway-system',
    );
    const [unscoped] = narrowedToScope([handler], undefined, 'causeway-system');
    assert.deepEqual(open?.filters, { namespaces: ['!causeway-system'] });
    assert.deepEqual(narrowed?.filters, { namespaces: ['team-*', '!causeway-system'] });
    assert.deepEqual(unscoped?.filters, { namespaces: ['!causeway-system'] });
    assert.equal(filterMiss(inNamespace('causeway-system'), open?.filters)?.filter, 'namespaces');
    assert.equal(filterMiss(inNamespace('team-a'), open?.filters), undefined);
    assert.equal(filterMiss(inNamespace('team-a'), narrowed?.filters), undefined);
    assert.equal(filterMiss(inNamespace('other'), narrowed?.filters)?.filter, 'namespaces');
    // A pin naming it (a FunctionService's editor's, say) does not bring it back.
    const [named] = narrowedToScope(
      [handler],
      { resources: ['*'], namespaces: ['causeway-system'] },
      'causeway-system',
    );
    assert.equal(filterMiss(inNamespace('causeway-system'), named?.filters)?.filter, 'namespaces');
  });

  it('is no namespace at all where the gateway has none (outside a pod, or --serve-own-namespace)', () => {
    assert.deepEqual(narrowedToScope([handler], { resources: ['*'] }), [handler]);
  });

  const ownGuard: AnswerGuard = {
    identity: DEFAULT_IDENTITY,
    ownNamespace: 'causeway-system',
    resourceOf: (apiVersion, kind) => guard.resourceOf(apiVersion, kind),
    current: (resource, namespace, name) => guard.current(resource, namespace, name),
  };
  const clusterScoped: KubernetesObject = {
    apiVersion: 'kopf.dev/v1',
    kind: 'KopfExample',
    metadata: { name: 'example', uid: 'uid-1' },
  };
  const refusal =
    /handler "handler": (apply|events)\[0\] would be in namespace causeway-system, the gateway's own, which it serves to no function service/;

  it('takes no child of an answer, scoped or not', async () => {
    const child = configMap({ namespace: 'causeway-system' });
    for (const pin of [scope, undefined]) {
      await assert.rejects(
        confineOutcomes({ handler: { status: 'success', apply: [child] } }, pin, ownGuard, handled),
        refusal,
      );
      await assert.rejects(
        confineOutcomes({ handler: { status: 'success', apply: [child] } }, pin, ownGuard, clusterScoped),
        refusal,
      );
    }
  });

  it('takes no event about an object there, scoped or not', async () => {
    const event = {
      type: 'Normal' as const,
      reason: 'Made',
      message: 'm',
      about: { apiVersion: 'v1', kind: 'ConfigMap', name: 'settings', namespace: 'causeway-system' },
    };
    for (const pin of [scope, undefined]) {
      await assert.rejects(
        confineOutcomes({ handler: { status: 'success', events: [event] } }, pin, ownGuard, handled),
        refusal,
      );
    }
  });

  it('leaves children and events in the handled object’s namespace as they were', async () => {
    const outcome: Outcome = {
      status: 'success',
      apply: [configMap()],
      events: [{ type: 'Normal' as const, reason: 'Made', message: 'm' }],
    };
    const { handler: confined } = await confineOutcomes({ handler: outcome }, scope, ownGuard, handled);
    assert.equal(confined?.apply?.length, 1);
    assert.equal(confined?.events?.length, 1);
  });
});
