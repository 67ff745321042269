import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  HANDLER_KIND_NAMES,
  type HandlerSpec,
  isAdmissionKind,
  type Manifest,
  PROTOCOL,
  type ResourceSelector,
} from '../../protocol/index.ts';
import {
  aggregatedDiscovery,
  familyNames,
  oddString,
  resourceSelector,
  type ServedFamily,
  wrongValue,
} from '../../test/support/arbitraries.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import { parseScope, ScopeError } from '../dispatch/scope.ts';
import { ProtocolError, parseManifest } from '../dispatch/validation.ts';
import type { KubeClient } from '../kube/client.ts';
import { type DiscoveredResource, Discovery, ResourceNotFound, resourceKey } from '../kube/discovery.ts';
import type { ServedResource } from '../reactor/model.ts';
import type { StateStorage } from '../state/storage.ts';
import {
  bindHandlers,
  firstOutsideScope,
  type Group,
  outsideScope,
  resourcesNamed,
  serveGroups,
  type Unresolved,
} from './binding.ts';

const resource = (plural: string) =>
  ({
    group: 'kopf.dev',
    version: 'v1',
    plural,
    kind: plural,
    namespaced: true,
  }) as unknown as DiscoveredResource;
const service = (name: string) => ({ name }) as unknown as FunctionService;
const handler = (id: string): HandlerSpec => ({ id, kind: 'create', resource: { name: 'x' } }) as HandlerSpec;

/** The groups as locate makes them: a handler by category is in the group of each resource of it. */
function groupsOf(...groups: [DiscoveredResource, Unresolved[]][]): Map<string, Group> {
  for (const [res, items] of groups) {
    for (const item of items) if (item.servedOn) item.servedOn.add(resourceKey(res));
  }
  return new Map(groups.map(([res, items]) => [resourceKey(res), { resource: res, items }]));
}

describe('serving groups of handlers', () => {
  it('serves every group, in order', async () => {
    const a = { service: service('s'), handler: handler('a') };
    const served: string[] = [];
    const result = await serveGroups(
      groupsOf([resource('as'), [a]], [resource('bs'), [a]]),
      async (group) => {
        served.push(group.resource.plural);
      },
    );
    assert.deepEqual(served, ['as', 'bs']);
    assert.deepEqual(result, { unserved: [] });
  });

  it('stops at a failure and gives back, once each, the handlers of the groups not served, unmarking those by category there', async () => {
    const named = { service: service('s'), handler: handler('named') };
    const later = { service: service('s'), handler: handler('later') };
    const byCategory: Unresolved = { service: service('s'), handler: handler('all'), servedOn: new Set() };
    const [first, failing, last] = [resource('firsts'), resource('failings'), resource('lasts')];
    const groups = groupsOf(
      [first, [named, byCategory]],
      [failing, [byCategory]],
      [last, [later, byCategory]],
    );
    const tried: string[] = [];
    const refused = new Error('the apiserver answered 503');
    const result = await serveGroups(groups, async (group) => {
      tried.push(group.resource.plural);
      if (group.resource === failing) throw refused;
    });
    assert.deepEqual(tried, ['firsts', 'failings'], 'nothing is tried after the failure');
    assert.equal(result.error, refused);
    assert.deepEqual(result.unserved, [byCategory, later], 'not the served group, and each handler once');
    assert.deepEqual([...(byCategory.servedOn ?? [])], [resourceKey(first)], 'still served on the first');
  });
});

describe('binding handlers to a served resource', () => {
  it('binds each under its service, once, however often it is bound', () => {
    const [one, other] = [service('one'), service('other')];
    const entry: ServedResource = {
      resource: resource('kopfexamples'),
      storage: undefined as unknown as StateStorage,
      bindings: [],
    };
    const create = { service: one, handler: handler('create') };
    bindHandlers(entry, [create, { service: one, handler: handler('update') }]);
    bindHandlers(entry, [create, { service: other, handler: handler('create') }]);
    assert.deepEqual(
      entry.bindings.map(({ service, handlers }) => [service.name, handlers.map(({ id }) => id)]),
      [
        ['one', ['create', 'update']],
        ['other', ['create']],
      ],
    );
  });
});

/** Discovery as the gateway loads it from the two documents an apiserver serves. */
function discoveryOf(documents: { core: unknown; named: unknown }): Promise<Discovery> {
  const client = { request: async (path: string) => (path === '/api' ? documents.core : documents.named) };
  return Discovery.load(client as unknown as KubeClient);
}

/**
 * The resources (by resourceKey) a handler's `resource` names, as kubectl would find them: by a name,
 * the one resource of that plural, singular, kind or short name (of the group given, in the version
 * given or its preferred one; the core group's where several groups have one, none where no group is
 * the core); by a category or `*`, each one of them that can be listed and watched, Events excepted.
 * An empty name names nothing: a singular or kind discovery leaves out is unknown, not empty.
 */
function namedByKubectl(
  selector: ResourceSelector,
  families: readonly ServedFamily[],
  versionOrder: readonly string[],
): string[] {
  let { name, group } = selector;
  if (selector.category === undefined && group === undefined && name?.includes('.')) {
    const dot = name.indexOf('.');
    [name, group] = [name.slice(0, dot), name.slice(dot + 1)];
  }
  const candidates = families.filter(
    (family) =>
      (group === undefined || family.group === group) &&
      (selector.version === undefined || family.versions.includes(selector.version)),
  );
  const keyOf = (family: ServedFamily) =>
    `${familyNames(family).plural}.${family.group}/${
      selector.version ?? versionOrder.find((version) => family.versions.includes(version))
    }`;
  if (selector.category !== undefined || name === '*') {
    return candidates
      .filter(
        (family) =>
          (selector.category === undefined || family.categories.includes(selector.category)) &&
          family.verbs.includes('list') &&
          family.verbs.includes('watch') &&
          !(family.stem === 'event' && ['', 'events.k8s.io'].includes(family.group)),
      )
      .map(keyOf);
  }
  const wanted = (name ?? '').toLowerCase();
  const matching = candidates.filter((family) => {
    const { plural, singular, kind, shortNames } = familyNames(family);
    return wanted !== '' && [plural, singular, kind.toLowerCase(), ...shortNames].includes(wanted);
  });
  if (matching.length === 1) return matching.map(keyOf);
  return matching.filter((family) => family.group === '').map(keyOf);
}

/** Whether a selector's name is `*`, of every group or of one. */
const namesSeveral = (selector: ResourceSelector) => /^\*(\.|$)/.test(selector.name ?? '');

/** A manifest whose handlers declare these resources, of any kind, with ids of any text. */
const manifestOf = fc
  .uniqueArray(
    fc.record({
      id: fc.oneof({ weight: 3, arbitrary: fc.constantFrom('create_fn', 'h1', 'h2', 'h3') }, oddString),
      kind: fc.constantFrom(...HANDLER_KIND_NAMES),
      resource: resourceSelector,
    }),
    { minLength: 1, maxLength: 5, selector: ({ id }) => id },
  )
  .map((handlers) => ({ protocol: PROTOCOL, name: 'svc', handlers }));

/** A manifest read as the gateway reads a service's reply; undefined when a ProtocolError refuses it. */
function manifestRead(manifest: unknown): Manifest | undefined {
  try {
    return parseManifest(manifest).manifest;
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    assert.match(error.message, /^manifest\.handlers\[\d+\]/, 'the error names the handler');
    return undefined;
  }
}

// Found by the property below: a name of nothing but a group matched a resource whose singular or
// kind discovery left out (as an aggregated API's), the first of the group: `.metrics.k8s.io` was pods.
describe('the resources handlers name', () => {
  it('finds none for a name that is only a group, however discovery describes the group', async () => {
    const discovery = await discoveryOf({
      core: { kind: 'APIGroupDiscoveryList', items: [] },
      named: {
        kind: 'APIGroupDiscoveryList',
        items: [
          {
            metadata: { name: 'metrics.k8s.io' },
            versions: [
              { version: 'v1beta1', resources: [{ resource: 'pods', scope: 'Namespaced', verbs: ['list'] }] },
            ],
          },
        ],
      },
    });
    const handler = { id: 'h', kind: 'create', resource: { name: '.metrics.k8s.io' } } as HandlerSpec;
    assert.deepEqual(resourcesNamed(handler, discovery), []);
    assert.throws(() => discovery.resolve(handler.resource), {
      name: 'ResourceNotFound',
      message: '".metrics.k8s.io" has no resource name before its group',
    });
  });
});

describe('the resources handlers name, from what services and the apiserver say (property-based)', () => {
  it('serves a handler on what kubectl would find for its resource, or refuses its manifest; never a resource it does not name', async () => {
    await fc.assert(
      fc.asyncProperty(aggregatedDiscovery, manifestOf, async (documents, manifest) => {
        const discovery = await discoveryOf(documents);
        for (const handler of manifestRead(manifest)?.handlers ?? []) {
          const expected = namedByKubectl(handler.resource, documents.families, documents.versionOrder);
          const found = resourcesNamed(handler, discovery).map(resourceKey);
          assert.deepEqual(found.sort(), expected.sort(), JSON.stringify(handler.resource));
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('says why a name finds no one resource, naming it as the handler wrote it', async () => {
    await fc.assert(
      fc.asyncProperty(aggregatedDiscovery, resourceSelector, async (documents, selector) => {
        const { name } = selector;
        if (name === undefined || namesSeveral(selector)) return;
        const discovery = await discoveryOf(documents);
        try {
          discovery.resolve(selector);
        } catch (error) {
          assert.ok(error instanceof ResourceNotFound, String(error));
          assert.ok(error.message.includes(`"${name}`), error.message);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('serves a service only within the scope its FunctionService pins, or refuses the scope, naming what is outside', async () => {
    const scopeEntry = fc.oneof(
      {
        weight: 12,
        arbitrary: fc.constantFrom(
          'pods',
          'kopfexamples.kopf.dev',
          'deployments.apps',
          'nodes.metrics.k8s.io',
        ),
      },
      fc.constant('*'),
      oddString,
    );
    const scopeList = fc.array(scopeEntry, { maxLength: 3 });
    const pinned = fc.oneof(
      {
        weight: 8,
        arbitrary: fc.record({ resources: scopeList, admission: scopeList }, { requiredKeys: [] }),
      },
      wrongValue,
    );
    await fc.assert(
      fc.asyncProperty(
        aggregatedDiscovery,
        manifestOf,
        fc.option(pinned, { nil: undefined }),
        oddString,
        async (documents, manifest, given, name) => {
          let scope: FunctionService['scope'];
          try {
            scope = given === undefined ? undefined : parseScope(given, 'spec.scope');
          } catch (error) {
            assert.ok(error instanceof ScopeError, String(error));
            assert.match(error.message, /^spec\.scope/);
            return;
          }
          const read = manifestRead(manifest);
          if (!read) return;
          const discovery = await discoveryOf(documents);
          const service = { name, scope, manifest: read };
          let firstRefused: string | undefined;
          for (const handler of read.handlers) {
            for (const resource of resourcesNamed(handler, discovery)) {
              const scopeName = resource.group ? `${resource.plural}.${resource.group}` : resource.plural;
              const list = isAdmissionKind(handler.kind) ? scope?.admission : scope?.resources;
              const inScope = !scope || list?.includes('*') || list?.includes(scopeName);
              const refused = outsideScope(service, handler, resource);
              if (inScope) {
                assert.equal(refused, undefined);
                continue;
              }
              assert.ok(
                refused?.startsWith(`handler "${handler.id}" of "${name}" names ${scopeName},`),
                refused,
              );
              const several = handler.resource.category !== undefined || namesSeveral(handler.resource);
              if (!several) firstRefused ??= refused;
            }
          }
          assert.equal(firstOutsideScope(service, discovery), firstRefused);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
