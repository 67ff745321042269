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
import { filterMiss } from '../reactor/filters.ts';
import {
  type AnswerGuard,
  beyondPin,
  confineOutcomes,
  covers,
  narrowedToScope,
  parseScope,
  ScopeError,
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
  it('takes a scope with its four lists', () => {
    const given = {
      resources: ['kopfexamples.kopf.dev'],
      admission: ['pods'],
      children: ['deployments.apps'],
      namespaces: ['team-*', '!team-x'],
    };
    assert.deepEqual(parseScope(given, 'scope'), given);
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
