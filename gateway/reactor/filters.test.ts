import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '../../protocol/index.ts';
import { changeMatches, filterMiss, objectMatches } from './filters.ts';

const object: KubernetesObject = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'a', uid: 'u', labels: { app: 'web', tier: 'front' }, annotations: { owner: 'me' } },
  spec: { replicas: 3, mode: 'fast' },
};

describe('handler filters', () => {
  it('match labels and annotations by value, presence and absence', () => {
    assert.equal(objectMatches(object, { labels: { app: 'web' } }), true);
    assert.equal(objectMatches(object, { labels: { app: 'db' } }), false);
    assert.equal(
      objectMatches(object, { labels: { tier: { present: true }, canary: { absent: true } } }),
      true,
    );
    assert.equal(objectMatches(object, { labels: { canary: { present: true } } }), false);
    assert.equal(objectMatches(object, { annotations: { owner: { absent: true } } }), false);
  });

  it('say which filter an object fails first, and the key or field it fails on', () => {
    assert.equal(filterMiss(object, undefined), undefined);
    assert.equal(filterMiss(object, { labels: { app: 'web' }, annotations: { owner: 'me' } }), undefined);
    assert.deepEqual(filterMiss(object, { labels: { app: 'web', canary: { present: true } } }), {
      filter: 'labels',
      key: 'canary',
    });
    assert.deepEqual(filterMiss(object, { annotations: { owner: { absent: true } } }), {
      filter: 'annotations',
      key: 'owner',
    });
    assert.deepEqual(filterMiss(object, { field: 'spec.mode', value: { equals: 'slow' } }), {
      filter: 'field',
      field: 'spec.mode',
    });
    const inTeam = { ...object, metadata: { ...object.metadata, namespace: 'team-a' } };
    assert.deepEqual(filterMiss(inTeam, { namespaces: ['default'], labels: { app: 'db' } }), {
      filter: 'namespaces',
    });
  });

  it("match the namespaces of a service's scope: names, globs, negations; any for a cluster-scoped object", () => {
    const inTeam = { ...object, metadata: { ...object.metadata, namespace: 'team-a' } };
    assert.equal(objectMatches(inTeam, { namespaces: ['team-*'] }), true);
    assert.equal(objectMatches(inTeam, { namespaces: ['team-*', '!team-a'] }), false);
    assert.equal(objectMatches(inTeam, { namespaces: ['default'] }), false);
    assert.equal(objectMatches(object, { namespaces: ['default'] }), true, 'cluster-scoped');
  });

  it('match a field by value, presence and absence', () => {
    assert.equal(objectMatches(object, { field: 'spec.replicas', value: { equals: 3 } }), true);
    assert.equal(objectMatches(object, { field: 'spec.replicas', value: { equals: 4 } }), false);
    assert.equal(objectMatches(object, { field: 'spec.missing', value: { absent: true } }), true);
    assert.equal(
      objectMatches(object, { field: 'spec.missing' }),
      true,
      'a field alone does not filter objects',
    );
  });

  it("match a field's value before or after an update, as Kopf does", () => {
    const filters = { field: 'spec.replicas', value: { equals: 4 } };
    assert.equal(objectMatches(object, filters, { spec: { replicas: 4 } }), true, 'it was 4');
    assert.equal(objectMatches(object, filters, { spec: { replicas: 2 } }), false, 'neither was 4');
    assert.equal(
      objectMatches(object, { ...filters, labels: { app: 'db' } }, { spec: { replicas: 4 } }),
      false,
      'labels are the current ones only',
    );
  });

  it('match the old and new values of a change', () => {
    assert.equal(changeMatches('slow', 'fast', { old: { equals: 'slow' }, new: { equals: 'fast' } }), true);
    assert.equal(changeMatches(undefined, 'fast', { old: { present: true } }), false);
    assert.equal(changeMatches('slow', undefined, { new: { absent: true } }), true);
  });
});
