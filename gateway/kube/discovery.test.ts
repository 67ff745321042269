import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from './client.ts';
import {
  collectionPath,
  DISCOVERY_FRESH_MS,
  type DiscoveredResource,
  Discovery,
  DiscoveryCache,
  describe as describeSelector,
  ResourceNotFound,
  selectsSeveral,
} from './discovery.ts';

function resource(
  fields: Partial<DiscoveredResource> & Pick<DiscoveredResource, 'group' | 'plural' | 'kind'>,
): DiscoveredResource {
  return {
    version: 'v1',
    namespaced: true,
    singular: fields.kind.toLowerCase(),
    shortNames: [],
    categories: [],
    subresources: [],
    verbs: [],
    ...fields,
  };
}

const discovery = new Discovery([
  resource({ group: '', plural: 'pods', kind: 'Pod', shortNames: ['po'], subresources: ['status'] }),
  resource({ group: '', plural: 'events', kind: 'Event', shortNames: ['ev'] }),
  resource({ group: 'events.k8s.io', plural: 'events', kind: 'Event', shortNames: ['ev'] }),
  resource({
    group: 'kopf.dev',
    version: 'v2',
    plural: 'kopfexamples',
    kind: 'KopfExample',
    shortNames: ['kex'],
  }),
  resource({ group: 'kopf.dev', plural: 'kopfexamples', kind: 'KopfExample', shortNames: ['kex'] }),
  resource({ group: 'a.example', plural: 'widgets', kind: 'Widget' }),
  resource({ group: 'b.example', plural: 'widgets', kind: 'Widget' }),
  resource({ group: '', plural: 'namespaces', kind: 'Namespace', namespaced: false }),
]);

describe('resource resolution', () => {
  it('accepts plural, singular, kind and short names, in the preferred version', () => {
    for (const name of ['kopfexamples', 'kopfexample', 'KopfExample', 'kex']) {
      const found = discovery.resolve({ name });
      assert.equal(`${found.plural}.${found.group}/${found.version}`, 'kopfexamples.kopf.dev/v2', name);
    }
  });

  it('accepts plural.group and an explicit version', () => {
    assert.equal(discovery.resolve({ name: 'widgets.b.example' }).group, 'b.example');
    assert.equal(discovery.resolve({ name: 'kex', version: 'v1' }).version, 'v1');
  });

  it('prefers the core group, and refuses other ambiguity with the candidates named', () => {
    assert.equal(discovery.resolve({ name: 'events' }).group, '');
    assert.throws(
      () => discovery.resolve({ name: 'widgets' }),
      /ambiguous: widgets.a.example, widgets.b.example/,
    );
  });

  it('says which name it could not find', () => {
    assert.throws(() => discovery.resolve({ name: 'gadgets', group: 'x.example' }), ResourceNotFound);
    assert.throws(() => discovery.resolve({ name: 'gadgets' }), /no resource "gadgets"/);
  });

  it('builds collection paths for core, grouped, namespaced and cluster-scoped resources', () => {
    assert.equal(collectionPath(discovery.resolve({ name: 'po' }), 'ns'), '/api/v1/namespaces/ns/pods');
    assert.equal(collectionPath(discovery.resolve({ name: 'kex' })), '/apis/kopf.dev/v2/kopfexamples');
    assert.equal(collectionPath(discovery.resolve({ name: 'namespaces' }), 'ns'), '/api/v1/namespaces');
  });
});

describe('resource selection by category and by *', () => {
  const WATCHABLE = ['get', 'list', 'watch', 'patch'];
  const cluster = new Discovery([
    resource({ group: '', plural: 'pods', kind: 'Pod', categories: ['all'], verbs: WATCHABLE }),
    resource({ group: '', plural: 'events', kind: 'Event', verbs: WATCHABLE }),
    resource({ group: '', plural: 'bindings', kind: 'Binding', verbs: ['create'] }),
    resource({
      group: 'apps',
      plural: 'deployments',
      kind: 'Deployment',
      categories: ['all'],
      verbs: WATCHABLE,
    }),
    resource({ group: 'events.k8s.io', plural: 'events', kind: 'Event', verbs: WATCHABLE }),
    resource({
      group: 'kopf.dev',
      version: 'v2',
      plural: 'kopfexamples',
      kind: 'KopfExample',
      categories: ['kopf'],
      verbs: WATCHABLE,
    }),
    resource({
      group: 'kopf.dev',
      plural: 'kopfexamples',
      kind: 'KopfExample',
      categories: ['kopf'],
      verbs: WATCHABLE,
    }),
    resource({
      group: 'kopf.dev',
      plural: 'kopfpeerings',
      kind: 'KopfPeering',
      categories: ['kopf'],
      verbs: WATCHABLE,
    }),
    resource({
      group: 'a.example',
      plural: 'widgets',
      kind: 'Widget',
      categories: ['kopf'],
      verbs: WATCHABLE,
    }),
  ]);
  const keys = (selected: DiscoveredResource[]) =>
    selected.map((found) => `${found.plural}.${found.group}/${found.version}`).sort();

  it('selects every resource of a category, in every group, each in its preferred version', () => {
    assert.deepEqual(keys(cluster.select({ category: 'kopf' })), [
      'kopfexamples.kopf.dev/v2',
      'kopfpeerings.kopf.dev/v1',
      'widgets.a.example/v1',
    ]);
    assert.deepEqual(keys(cluster.select({ category: 'all' })), ['deployments.apps/v1', 'pods./v1']);
    assert.deepEqual(cluster.select({ category: 'nothing' }), []);
  });

  it('narrows a category to the group and version given', () => {
    assert.deepEqual(keys(cluster.select({ category: 'kopf', group: 'a.example' })), [
      'widgets.a.example/v1',
    ]);
    assert.deepEqual(keys(cluster.select({ category: 'kopf', version: 'v1' })), [
      'kopfexamples.kopf.dev/v1',
      'kopfpeerings.kopf.dev/v1',
      'widgets.a.example/v1',
    ]);
    assert.deepEqual(keys(cluster.select({ category: 'all', group: '' })), ['pods./v1']);
  });

  it('selects everything that can be listed and watched with *, but no Events of either group', () => {
    assert.deepEqual(keys(cluster.select({ name: '*' })), [
      'deployments.apps/v1',
      'kopfexamples.kopf.dev/v2',
      'kopfpeerings.kopf.dev/v1',
      'pods./v1',
      'widgets.a.example/v1',
    ]);
    assert.deepEqual(keys(cluster.select({ name: '*.kopf.dev' })), [
      'kopfexamples.kopf.dev/v2',
      'kopfpeerings.kopf.dev/v1',
    ]);
    assert.deepEqual(keys(cluster.select({ group: 'kopf.dev', version: 'v1', name: '*' })), [
      'kopfexamples.kopf.dev/v1',
      'kopfpeerings.kopf.dev/v1',
    ]);
    assert.deepEqual(
      keys(cluster.select({ group: '', name: '*' })),
      ['pods./v1'],
      'named, Events are served',
    );
    assert.equal(cluster.resolve({ name: 'events', group: 'events.k8s.io' }).kind, 'Event');
  });

  it('tells selectors for several resources from names, and resolves only names', () => {
    assert.equal(selectsSeveral({ category: 'all' }), true);
    assert.equal(selectsSeveral({ name: '*' }), true);
    assert.equal(selectsSeveral({ name: '*.kopf.dev' }), true);
    assert.equal(selectsSeveral({ name: 'kex' }), false);
    assert.deepEqual(keys(cluster.select({ name: 'KopfExample' })), ['kopfexamples.kopf.dev/v2']);
    assert.throws(() => cluster.resolve({ category: 'all' }), /category all" selects several resources/);
    assert.throws(() => cluster.resolve({ name: '*' }), /selects several resources/);
    assert.equal(
      describeSelector({ category: 'kopf', group: 'kopf.dev', version: 'v1' }),
      'category kopf of kopf.dev/v1',
    );
  });
});

describe('discovery kept for the steps of the start', () => {
  /** A client whose discovery answers count its loads; `failing` makes the next ones fail. */
  function countingClient() {
    const state = { loads: 0, failing: false };
    const client = {
      request: async (path: string) => {
        if (path === '/api') state.loads++;
        if (state.failing) throw new Error('the apiserver is unreachable');
        return { kind: 'APIGroupDiscoveryList', items: [] };
      },
    } as unknown as KubeClient;
    return { state, client };
  }

  it('shares one load between the steps that ask within a second of it, in flight or done', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: 0 });
    const { state, client } = countingClient();
    const cache = new DiscoveryCache(client);
    const started = cache.reload(); // before the manifests are read
    const [inFlight] = await Promise.all([cache.fresh(), started]);
    assert.equal(inFlight, await started);
    t.mock.timers.tick(DISCOVERY_FRESH_MS - 1);
    assert.equal(await cache.fresh(), await started);
    assert.equal(state.loads, 1);
  });

  it('loads again once the last load is a second old', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: 0 });
    const { state, client } = countingClient();
    const cache = new DiscoveryCache(client);
    await cache.reload();
    t.mock.timers.tick(DISCOVERY_FRESH_MS);
    await cache.fresh();
    assert.equal(state.loads, 2);
  });

  it('loads again after a load that failed, rather than fail the same way', async () => {
    const { state, client } = countingClient();
    const cache = new DiscoveryCache(client);
    state.failing = true;
    await assert.rejects(cache.reload(), /unreachable/);
    state.failing = false;
    await cache.fresh();
    assert.equal(state.loads, 2);
  });
});
