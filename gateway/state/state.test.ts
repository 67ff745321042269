import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '../../protocol/index.ts';
import { detectCause } from '../causes.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import { essenceOf, serializeEssence } from './essence.ts';
import { statusKeeps } from './schema.ts';
import { StateStorage } from './storage.ts';

function object(extra: Partial<KubernetesObject> = {}): KubernetesObject {
  return {
    apiVersion: 'kopf.dev/v1',
    kind: 'KopfExample',
    metadata: {
      name: 'a',
      namespace: 'ns',
      uid: 'u1',
      resourceVersion: '7',
      generation: 3,
      labels: { app: 'x' },
      annotations: {
        note: 'kept',
        'causeway.dev/last-handled': '{}',
        'kubectl.kubernetes.io/last-applied-configuration': '{}',
      },
    },
    spec: { b: 1, a: [1, 2] },
    status: { anything: true },
    ...extra,
  };
}

describe('essence', () => {
  it('keeps spec, labels and foreign annotations; drops status, system metadata and bookkeeping', () => {
    assert.deepEqual(essenceOf(object(), 'causeway.dev'), {
      spec: { b: 1, a: [1, 2] },
      metadata: { labels: { app: 'x' }, annotations: { note: 'kept' } },
    });
  });

  it('serialises equal essences to equal strings regardless of key order', () => {
    assert.equal(
      serializeEssence({ spec: { b: 1, a: { y: 1, x: 2 } } }),
      serializeEssence({ spec: { a: { x: 2, y: 1 }, b: 1 } }),
    );
    assert.notEqual(serializeEssence({ spec: { a: [1, 2] } }), serializeEssence({ spec: { a: [2, 1] } }));
  });
});

describe('state storage', () => {
  it('writes to the status or to an annotation, and reads from either', () => {
    const inStatus = new StateStorage('status', DEFAULT_IDENTITY);
    const inAnnotations = new StateStorage('annotations', DEFAULT_IDENTITY);
    assert.deepEqual(inStatus.write({ essence: 'E' }), { status: { causeway: { essence: 'E' } } });
    assert.deepEqual(inAnnotations.write({ essence: 'E' }), {
      object: { metadata: { annotations: { 'causeway.dev/last-handled': 'E' } } },
    });
    const annotated = object();
    assert.equal(inStatus.read(annotated).essence, '{}', 'a status storage still finds an annotation record');
    assert.equal(inAnnotations.read(object({ status: { causeway: { essence: 'S' } } })).essence, 'S');
  });

  it('honours another identity, ignoring records of the default one', () => {
    const other = new StateStorage('status', {
      ...DEFAULT_IDENTITY,
      statusKey: 'other',
      annotationPrefix: 'other.example',
    });
    assert.deepEqual(other.read(object({ status: { causeway: { essence: 'S' } } })), {});
  });
});

describe('cause detection', () => {
  it('sees a never-handled object as created, a handled one as nothing new', () => {
    assert.deepEqual(detectCause(object(), {}), { reason: 'create' });
    assert.deepEqual(detectCause(object(), { essence: '{}' }), { reason: 'none' });
  });

  it('does not create an object that is being deleted', () => {
    const deleting = object();
    deleting.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
    assert.deepEqual(detectCause(deleting, {}), { reason: 'none' });
  });
});

describe('structural schema pruning', () => {
  const preserve = { 'x-kubernetes-preserve-unknown-fields': true };
  it('keeps our status key when status preserves unknown fields or declares it', () => {
    assert.equal(statusKeeps(undefined, 'causeway'), true);
    assert.equal(
      statusKeeps({ type: 'object', properties: { status: { type: 'object', ...preserve } } }, 'causeway'),
      true,
    );
    assert.equal(
      statusKeeps(
        { properties: { status: { properties: { causeway: { type: 'object', ...preserve } } } } },
        'causeway',
      ),
      true,
    );
  });

  it('predicts pruning when status has a fixed schema without our key', () => {
    assert.equal(
      statusKeeps(
        { properties: { status: { type: 'object', properties: { phase: { type: 'string' } } } } },
        'causeway',
      ),
      false,
    );
    assert.equal(
      statusKeeps({ type: 'object', properties: { spec: { type: 'object' } } }, 'causeway'),
      false,
    );
    assert.equal(
      statusKeeps(
        { properties: { status: { properties: { causeway: { type: 'object', properties: {} } } } } },
        'causeway',
      ),
      false,
    );
  });
});
