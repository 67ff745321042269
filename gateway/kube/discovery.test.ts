import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { collectionPath, type DiscoveredResource, Discovery, ResourceNotFound } from './discovery.ts';

function resource(
  fields: Partial<DiscoveredResource> & Pick<DiscoveredResource, 'group' | 'plural' | 'kind'>,
): DiscoveredResource {
  return {
    version: 'v1',
    namespaced: true,
    singular: fields.kind.toLowerCase(),
    shortNames: [],
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
