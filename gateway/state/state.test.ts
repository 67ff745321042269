import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '../../protocol/index.ts';
import { jsonCopy, mergePatched } from '../../protocol/json.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import { detectCause } from '../reactor/causes.ts';
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
    const record = { started: 'T', retries: 1, delayedUntil: 'U' };
    const progress = { 'svc/create_fn': record };
    const stored = { svc: { create_fn: record } };
    assert.deepEqual(inStatus.write({ progress }), { status: { causeway: { progress: stored } } });
    assert.deepEqual(inAnnotations.write({ progress: null }), {
      object: { metadata: { annotations: { 'causeway.dev/progress': null } } },
    });
    const annotatedProgress = object();
    annotatedProgress.metadata.annotations = { 'causeway.dev/progress': JSON.stringify(stored) };
    assert.deepEqual(inStatus.read(annotatedProgress).progress, progress);
    const annotated = object();
    assert.equal(inStatus.read(annotated).essence, '{}', 'a status storage still finds an annotation record');
    assert.equal(inAnnotations.read(object({ status: { causeway: { essence: 'S' } } })).essence, 'S');
  });

  it("keeps each service's progress apart: two services' handlers of one id, and their sub-handlers", () => {
    const storage = new StateStorage('status', DEFAULT_IDENTITY);
    const done = { started: 'T', retries: 0, success: true as const };
    const retrying = { started: 'T', retries: 2, delayedUntil: 'U' };
    const progress = { 'a/create_fn': done, 'b/create_fn': retrying, 'b/create_fn#step': done };
    const patch = storage.write({ progress });
    assert.deepEqual(patch.status, {
      causeway: { progress: { a: { create_fn: done }, b: { create_fn: retrying, 'create_fn#step': done } } },
    });
    const handlers = [
      { service: 'a', id: 'create_fn' },
      { service: 'b', id: 'create_fn' },
    ];
    assert.deepEqual(storage.read(object({ status: patch.status }), handlers).progress, progress);
  });

  it("reads a record kept by id alone as the one service's with that id, and writes it anew with the next progress", () => {
    const inStatus = new StateStorage('status', DEFAULT_IDENTITY);
    const done = { started: 'T', retries: 0, success: true as const };
    const retrying = { started: 'T', retries: 3 };
    // As a gateway before progress was kept by service left it: one handler done, a sub-handler, one of a service gone.
    const old = { create_fn: done, 'step_fn#one': retrying, gone_fn: retrying };
    const handlers = [
      { service: 'a', id: 'create_fn' },
      { service: 'a', id: 'step_fn' },
      { service: 'b', id: 'update_fn' },
    ];
    const read = inStatus.read(object({ status: { causeway: { progress: old } } }), handlers);
    assert.deepEqual(read.progress, { 'a/create_fn': done, 'a/step_fn#one': retrying });
    assert.deepEqual(jsonCopy(read.legacy), {
      claimed: ['create_fn', 'step_fn#one'],
      unclaimed: { gone_fn: retrying },
    });
    const next = { ...read.progress, 'b/update_fn': retrying };
    assert.deepEqual(inStatus.write({ progress: next }, read).status, {
      causeway: {
        progress: {
          create_fn: null,
          'step_fn#one': null,
          a: { create_fn: done, 'step_fn#one': retrying },
          b: { update_fn: retrying },
        },
      },
    });
    const inAnnotations = new StateStorage('annotations', DEFAULT_IDENTITY);
    const annotated = object();
    annotated.metadata.annotations = { 'causeway.dev/progress': JSON.stringify(old) };
    const written = inAnnotations.write({ progress: next }, inAnnotations.read(annotated, handlers)).object;
    const annotations = (written?.metadata as { annotations: Record<string, string> } | undefined)
      ?.annotations;
    const text = annotations?.['causeway.dev/progress'];
    assert.deepEqual(
      JSON.parse(text as string),
      {
        gone_fn: retrying,
        a: { create_fn: done, 'step_fn#one': retrying },
        b: { update_fn: retrying },
      },
      'a record no handler claims is kept as it was',
    );
  });

  it('rewrites a record kept by id alone whose id is the name of a service: the merge leaves none of it', () => {
    const storage = new StateStorage('status', DEFAULT_IDENTITY);
    const old = { billing: { started: 'T', retries: 2, message: 'not yet' } };
    const handlers = [{ service: 'billing', id: 'billing' }];
    const before = object({ status: { causeway: { progress: old } } });
    const read = storage.read(before, handlers);
    const next = { 'billing/billing': { started: 'T', retries: 3 } };
    const after = mergePatched(before, storage.write({ progress: next }, read)) as KubernetesObject;
    assert.deepEqual(jsonCopy(after.status?.causeway), {
      progress: { billing: { billing: next['billing/billing'] } },
    });
    assert.deepEqual(jsonCopy(storage.read(after, handlers).progress), next);
    // A record no handler claims, named as the service: the service's map replaces it.
    const others = [{ service: 'billing', id: 'create_fn' }];
    const own = { 'billing/create_fn': { started: 'T', retries: 1 } };
    const merged = mergePatched(before, storage.write({ progress: own }, storage.read(before, others)));
    assert.deepEqual(jsonCopy(storage.read(merged as KubernetesObject, others).progress), own);
  });

  it("reads a record kept by id alone as each service's when two have that id, as it was before", () => {
    const storage = new StateStorage('status', DEFAULT_IDENTITY);
    const done = { started: 'T', retries: 0, success: true as const };
    const handlers = [
      { service: 'a', id: 'create_fn' },
      { service: 'b', id: 'create_fn' },
    ];
    const read = storage.read(object({ status: { causeway: { progress: { create_fn: done } } } }), handlers);
    assert.deepEqual(read.progress, { 'a/create_fn': done, 'b/create_fn': done });
    const newer = { started: 'T', retries: 1 };
    const mixed = { create_fn: done, b: { create_fn: newer } };
    assert.deepEqual(
      storage.read(object({ status: { causeway: { progress: mixed } } }), handlers).progress,
      { 'a/create_fn': done, 'b/create_fn': newer },
      'a record in the new form wins over the old one',
    );
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
  const context = { annotationPrefix: 'causeway.dev', firstSight: false };
  const handled = (of: KubernetesObject) => serializeEssence(essenceOf(of, 'causeway.dev'));

  it('sees a never-handled object as created, with the whole essence as its diff', () => {
    const cause = detectCause(object(), {}, context);
    assert.equal(cause.reason, 'create');
    assert.equal(cause.old, undefined);
    assert.deepEqual(cause.diff, [['add', [], undefined, cause.new]]);
  });

  it('sees a change of spec, labels or foreign annotations as an update, with its diff', () => {
    const changed = object({ spec: { b: 2, a: [1, 2] } });
    changed.metadata.labels = { app: 'y' };
    const cause = detectCause(changed, { essence: handled(object()) }, context);
    assert.equal(cause.reason, 'update');
    assert.deepEqual(cause.diff, [
      ['change', ['metadata', 'labels', 'app'], 'x', 'y'],
      ['change', ['spec', 'b'], 1, 2],
    ]);
  });

  it('ignores status, system metadata and its own annotations; resumes on first sight', () => {
    const touched = object({ status: { other: 1 } });
    touched.metadata.resourceVersion = '99';
    touched.metadata.generation = 9;
    touched.metadata.annotations = { ...touched.metadata.annotations, 'causeway.dev/progress': '{}' };
    assert.equal(detectCause(touched, { essence: handled(object()) }, context).reason, 'none');
    assert.equal(
      detectCause(touched, { essence: handled(object()) }, { ...context, firstSight: true }).reason,
      'resume',
    );
  });

  it('sees a deletion whatever else changed', () => {
    const deleting = object();
    deleting.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
    assert.equal(detectCause(deleting, {}, context).reason, 'delete');
    assert.equal(detectCause(deleting, { essence: '{}' }, context).reason, 'delete');
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
