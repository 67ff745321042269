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
import type { DiscoveredResource } from '../kube/discovery.ts';
import { writerOf } from '../kube/written-as.ts';
import { nameGenerated } from '../reactor/outcomes.ts';
import {
  type AnswerGuard,
  beyondPin,
  confineOutcomes,
  covers,
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

/** An instance, as the gateway's guard (binding/scope-check.ts) is: its methods are its class's, not its own. */
class KnownKinds implements AnswerGuard {
  readonly identity = DEFAULT_IDENTITY;

  async resourceOf(apiVersion: string, kind: string): Promise<DiscoveredResource> {
    const found = KINDS[`${apiVersion}/${kind}`];
    if (!found) throw new Error(`no ${kind}`);
    return found;
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
  it('takes a scope with its four lists and the account to write as', () => {
    const given = {
      resources: ['kopfexamples.kopf.dev'],
      admission: ['pods'],
      children: ['deployments.apps'],
      namespaces: ['team-*', '!team-x'],
      impersonate: 'team-a/kopf.writer',
    };
    assert.deepEqual(parseScope(given, 'scope'), given);
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

  it('keeps a child left unowned on purpose, or owned by the handled object', async () => {
    const unowned = configMap({ ownerReferences: [] });
    assert.deepEqual((await confine({ status: 'success', apply: [unowned] })).handler?.apply, [unowned]);
    const owned = configMap({ ownerReferences: [{ uid: 'uid-1' }] });
    assert.deepEqual((await confine({ status: 'success', apply: [owned] })).handler?.apply, [owned]);
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
      writer,
    );
    const [named] = nameGenerated(handler?.apply ?? [], 'uid-1/handler');
    assert.deepEqual(writerOf({ ...(named as object) }), writer);
    assert.equal(Object.getOwnPropertySymbols(named).length, 1, 'marked');
    const sent = JSON.parse(JSON.stringify(named));
    assert.deepEqual(sent, Object.fromEntries(Object.entries(named as object)), 'JSON leaves the mark out');
    assert.equal(writerOf(sent), undefined);
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
