/**
 * Kopf's state read as ours. The annotations below are what Kopf 1.45.2 wrote for these bodies: made
 * by its own storages (AnnotationsDiffBaseStorage.build/store after SmartProgressStorage.clear, as its
 * processing does; HandlerState.with_outcome/for_storage and SmartProgressStorage.store for progress).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HandlerSpec, KubernetesObject } from '../../protocol/index.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import { detectCause } from '../reactor/causes.ts';
import { planCause } from '../reactor/plan.ts';
import { essenceOf, serializeEssence } from './essence.ts';
import { KOPF_PREFIX, kopfEssence, kopfProgress } from './kopf.ts';
import { StateStorage } from './storage.ts';

const OWN = DEFAULT_IDENTITY.annotationPrefix;
const CUSTOM = 'my-op.example.com';
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** The body Kopf handled, with what Kopf wrote on it. */
function handled(annotations: Record<string, string> = {}): KubernetesObject {
  return {
    apiVersion: 'kopf.dev/v1',
    kind: 'KopfExample',
    metadata: {
      name: 'a',
      namespace: 'ns',
      uid: 'u1',
      resourceVersion: '8',
      generation: 3,
      creationTimestamp: '2026-01-01T00:00:00Z',
      managedFields: [{ manager: 'kubectl' }],
      labels: { app: 'x' },
      annotations: { note: 'kept', [LAST_APPLIED]: '{"spec":{}}\n', ...annotations },
    },
    spec: { field: 'value', items: ['b', 'a'], nested: { n: 1.5, empty: {} } },
    status: { create_fn: { message: 'hello' } },
  };
}

const DIFF_BASE =
  '{"spec":{"field":"value","items":["b","a"],"nested":{"n":1.5,"empty":{}}},"metadata":{"labels":{"app":"x"},"annotations":{"note":"kept"}}}\n';
const byKopf = () => handled({ [`${KOPF_PREFIX}/last-handled-configuration`]: DIFF_BASE });

const context = (prefix = KOPF_PREFIX, handlerIds: string[] = []) => ({ prefix, ownPrefix: OWN, handlerIds });
const adopting = new StateStorage('status', DEFAULT_IDENTITY, KOPF_PREFIX);
const causeContext = { annotationPrefix: OWN, firstSight: false, adoptedPrefix: KOPF_PREFIX };
const causeOf = (object: KubernetesObject, storage = adopting, ids: string[] = []) =>
  detectCause(object, storage.read(object, owned(ids)), causeContext);
/** The handlers of these ids, of the one service on the resource. */
const owned = (ids: readonly string[]) => ids.map((id) => ({ service: 'svc', id }));

describe("Kopf's diff-base as our essence", () => {
  it('makes an object unchanged since Kopf handled it compare equal: nothing to do, a resumption at first sight', () => {
    const object = byKopf();
    assert.equal(
      kopfEssence(object, context()),
      serializeEssence(essenceOf(object, OWN, KOPF_PREFIX)),
      'spec, labels and annotations as ours; kubectl and Kopf bookkeeping left out on both sides',
    );
    assert.equal(causeOf(object).reason, 'none');
    assert.equal(
      detectCause(object, adopting.read(object), { ...causeContext, firstSight: true }).reason,
      'resume',
    );
  });

  it('sees a change made while no operator ran as an update, with its diff', () => {
    const object = byKopf();
    object.spec = { ...object.spec, field: 'changed' };
    object.metadata.annotations = { ...object.metadata.annotations, added: 'by a user' };
    const cause = causeOf(object);
    assert.equal(cause.reason, 'update');
    assert.deepEqual(cause.diff, [
      ['add', ['metadata', 'annotations', 'added'], undefined, 'by a user'],
      ['change', ['spec', 'field'], 'value', 'changed'],
    ]);
  });

  it("never takes Kopf's own annotations for a change: progress, touches, its marker", () => {
    const object = byKopf();
    object.metadata.annotations = {
      ...object.metadata.annotations,
      [`${KOPF_PREFIX}/update_fn`]: '{"started":"2026-11-23T18:03:34.816102+00:00","retries":1}',
      [`${KOPF_PREFIX}/touch-dummy`]: '2026-11-23T18:03:35.000000+00:00',
    };
    assert.equal(causeOf(object).reason, 'none');
  });

  it('compares equal where both leave out empty labels and annotations, and keeps an empty spec', () => {
    const object: KubernetesObject = {
      apiVersion: 'kopf.dev/v1',
      kind: 'KopfExample',
      metadata: {
        name: 'e',
        uid: 'u2',
        labels: {},
        annotations: {
          [`${KOPF_PREFIX}/create_fn`]: '{"started":"x"}',
          [`${KOPF_PREFIX}/last-handled-configuration`]: '{"spec":{}}\n',
        },
      },
      spec: {},
    };
    assert.equal(kopfEssence(object, context()), '{"spec":{}}');
    assert.equal(causeOf(object).reason, 'none');
    object.spec = { size: 1 };
    assert.deepEqual(causeOf(object).diff, [['add', ['spec', 'size'], undefined, 1]]);
  });

  it("reads another prefix, and compares equal where Kopf left other Kopf operators' annotations out", () => {
    const object = handled({
      [`${CUSTOM}/kopf-managed`]: 'yes',
      [`${CUSTOM}/update_fn`]: '{}',
      'other-op.example.org/kopf-managed': 'yes',
      'other-op.example.org/last-handled-configuration': '{}',
      [`${KOPF_PREFIX}/last-handled-configuration`]: '{}',
      [`${CUSTOM}/last-handled-configuration`]: DIFF_BASE,
    });
    const storage = new StateStorage('annotations', DEFAULT_IDENTITY, CUSTOM);
    const context = { ...causeContext, adoptedPrefix: CUSTOM };
    assert.equal(detectCause(object, storage.read(object), context).reason, 'none');
    assert.equal(causeOf(object).reason, 'update', 'under the default prefix, that diff-base is another');
  });

  it('drops what Kopf records but we do not: a status field, our own annotations', () => {
    const object = byKopf();
    object.metadata.annotations = {
      ...object.metadata.annotations,
      [`${KOPF_PREFIX}/last-handled-configuration`]:
        '{"spec":{"field":"value","items":["b","a"],"nested":{"n":1.5,"empty":{}}},"metadata":{"labels":{"app":"x"},"annotations":{"note":"kept","causeway.dev/progress":"{}"}},"status":{"phase":"x"}}\n',
    };
    assert.equal(causeOf(object).reason, 'none');
  });

  it('handles the object as new without adoption, or when the diff-base is damaged', () => {
    assert.equal(causeOf(byKopf(), new StateStorage('status', DEFAULT_IDENTITY)).reason, 'create');
    const damaged = handled({ [`${KOPF_PREFIX}/last-handled-configuration`]: '{"spec":' });
    assert.equal(causeOf(damaged).reason, 'create');
    assert.equal(causeOf(handled()).reason, 'create', 'Kopf never handled it');
  });

  it('reads the name Kopf gives its state on ReplicaSets of Deployments', () => {
    const replicaSet: KubernetesObject = {
      ...byKopf(),
      kind: 'ReplicaSet',
      metadata: {
        ...handled().metadata,
        ownerReferences: [{ kind: 'Deployment', name: 'd' }],
        annotations: {
          ...handled().metadata.annotations,
          [`${KOPF_PREFIX}/last-handled-configuration`]: '{"spec":{"replicas":9}}\n', // the Deployment's
          [`${KOPF_PREFIX}/last-handled-configuration-ofDRS`]: DIFF_BASE,
        },
      },
    };
    assert.equal(causeOf(replicaSet).reason, 'none');
  });
});

describe("Kopf's progress as ours", () => {
  // What Kopf 1.45.2 wrote for update_fn (retried once, its sub-handler sub1 done, sub2 retried twice),
  // other_fn (done) and field_fn/spec.field (retried twice), under one prefix.
  const progressAnnotations = (prefix: string) => ({
    [`${prefix}/update_fn`]:
      '{"started":"2026-11-23T18:03:34.816102+00:00","delayed":"2026-11-23T18:03:34.816142+00:00","purpose":"update","retries":1,"success":false,"failure":false,"subrefs":["update_fn/sub1","update_fn/sub2"]}',
    [`${prefix}/update_fn.sub1`]:
      '{"started":"2026-11-23T18:03:34.816102+00:00","stopped":"2026-11-23T18:03:34.816137+00:00","purpose":"update","retries":1,"success":true,"failure":false}',
    [`${prefix}/update_fn.sub2`]:
      '{"started":"2026-11-23T18:03:34.816102+00:00","delayed":"2026-11-23T18:04:34.816130+00:00","purpose":"update","retries":2,"success":false,"failure":false,"message":"still not"}',
    [`${prefix}/other_fn`]:
      '{"started":"2026-11-23T18:03:34.816102+00:00","stopped":"2026-11-23T18:03:34.816137+00:00","purpose":"update","retries":1,"success":true,"failure":false}',
    [`${prefix}/field_fn.spec.field`]:
      '{"started":"2026-11-23T18:03:34.816102+00:00","delayed":"2026-11-23T18:04:34.816130+00:00","purpose":"update","retries":2,"success":false,"failure":false,"message":"still not"}',
  });
  const ids = ['update_fn', 'other_fn', 'field_fn/spec.field', 'create_fn'];
  const started = '2026-11-23T18:03:34.816Z';
  const expected = {
    update_fn: { started, retries: 1, delayedUntil: started },
    'update_fn#sub1': { started, retries: 1, success: true },
    'update_fn#sub2': { started, retries: 2, delayedUntil: '2026-11-23T18:04:34.816Z', message: 'still not' },
    other_fn: { started, retries: 1, success: true },
    'field_fn/spec.field': {
      started,
      retries: 2,
      delayedUntil: '2026-11-23T18:04:34.816Z',
      message: 'still not',
    },
  };

  it("takes over the records of the handlers it is asked about, by Kopf's names for them", () => {
    assert.deepEqual(
      kopfProgress(handled(progressAnnotations(KOPF_PREFIX)), context(KOPF_PREFIX, ids)),
      expected,
    );
    assert.deepEqual(kopfProgress(handled(progressAnnotations(CUSTOM)), context(CUSTOM, ids)), expected);
    assert.equal(kopfProgress(handled(progressAnnotations(CUSTOM)), context(KOPF_PREFIX, ids)), undefined);
  });

  it('reads the status where older Kopf kept progress, and their times without a zone as UTC', () => {
    const object = handled();
    object.status = {
      kopf: { progress: { create_fn: { started: '2020-02-14T16:58:25.396421', retries: 3 } } },
    };
    assert.deepEqual(kopfProgress(object, context(KOPF_PREFIX, ids)), {
      create_fn: { started: '2020-02-14T16:58:25.396Z', retries: 3 },
    });
  });

  it('leaves out records it cannot read, and handlers whose names Kopf shortens with a digest', () => {
    const long = 'a'.repeat(64);
    const object = handled({
      [`${KOPF_PREFIX}/create_fn`]: '{"retries":1}',
      [`${KOPF_PREFIX}/${long}`]: '{"started":"2026-11-23T18:03:34.816102+00:00"}',
    });
    assert.equal(kopfProgress(object, context(KOPF_PREFIX, ['create_fn', long])), undefined);
  });

  it('goes on with a half-done change where Kopf left it: retries kept, done handlers not called again', () => {
    const object = byKopf();
    object.spec = { ...object.spec, field: 'changed' };
    object.metadata.annotations = { ...object.metadata.annotations, ...progressAnnotations(KOPF_PREFIX) };
    const cause = causeOf(object, adopting, ids);
    const updates = ['update_fn', 'other_fn', 'another_fn'].map((id) => ({
      service: 'svc',
      spec: { id, kind: 'update', resource: { name: 'kopfexamples' } } as HandlerSpec,
    }));
    const stored = adopting.read(object, owned(ids));
    const plan = planCause(object, cause, updates, stored.progress, new Date('2026-11-23T18:03:40Z'));
    assert.deepEqual(
      plan.due.map(({ spec, progress }) => [spec.id, progress.retries]),
      [
        ['update_fn', 1],
        ['another_fn', 0],
      ],
    );
  });

  it('reads our own record once there is one: our progress first, and Kopf never again after our essence', () => {
    const object = byKopf();
    object.metadata.annotations = { ...object.metadata.annotations, ...progressAnnotations(KOPF_PREFIX) };
    const ours = { update_fn: { started, retries: 5 } };
    object.status = { causeway: { progress: { svc: ours } } };
    assert.deepEqual(adopting.read(object, owned(ids)), {
      essence: kopfEssence(object, context()),
      progress: { 'svc/update_fn': ours.update_fn },
    });
    object.status = { causeway: { essence: '{"spec":{}}' } };
    assert.deepEqual(adopting.read(object, owned(ids)), { essence: '{"spec":{}}' });
    assert.equal(
      adopting.kept(byKopf(), kopfEssence(byKopf(), context()) as string),
      false,
      'only ours is kept',
    );
  });

  it('keeps adopting when its state moves to annotations', () => {
    assert.equal(adopting.inAnnotations().adoptKopf, KOPF_PREFIX);
    assert.equal(adopting.inAnnotations().location, 'annotations');
  });
});
