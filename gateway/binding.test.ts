import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HandlerSpec } from '../protocol/index.ts';
import { bindHandlers, type Group, resourceKey, serveGroups, type Unresolved } from './binding.ts';
import type { FunctionService } from './dispatch/function-service.ts';
import type { DiscoveredResource } from './kube/discovery.ts';
import type { ServedResource } from './reactor/model.ts';
import type { StateStorage } from './state/storage.ts';

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
