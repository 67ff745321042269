import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { HandlerSpec, KubernetesObject } from '../../protocol/index.ts';
import { isObject } from '../../protocol/json.ts';
import { jsonTree, jsonValue, kubeObject, PROTOTYPE_MEMBERS } from '../../test/support/arbitraries.ts';
import { essenceOf, serializeEssence } from '../state/essence.ts';
import { detectCause } from './causes.ts';
import { planCause } from './plan.ts';

const resource = { name: 'kopfexamples' };
const handler = (id: string, kind: HandlerSpec['kind'], extra: Partial<HandlerSpec> = {}) => ({
  service: 'svc',
  spec: { id, kind, resource, ...extra },
});
const handlers = [
  handler('on_create', 'create'),
  handler('on_update', 'update'),
  handler('on_delete', 'delete'),
  handler('on_resume', 'resume'),
  handler('on_field', 'field', { filters: { field: 'spec.mode' } }),
  handler('to_fast', 'update', {
    filters: { field: 'spec.mode', old: { equals: 'slow' }, new: { equals: 'fast' } },
  }),
  handler('web_only', 'create', { filters: { labels: { app: 'web' } } }),
];

function object(spec: Record<string, unknown>, labels?: Record<string, string>): KubernetesObject {
  return {
    apiVersion: 'kopf.dev/v1',
    kind: 'KopfExample',
    metadata: { name: 'a', uid: 'u', ...(labels ? { labels } : {}) },
    spec,
  };
}
const stored = (of: KubernetesObject) => ({ essence: serializeEssence(essenceOf(of, 'causeway.dev')) });
const context = { annotationPrefix: 'causeway.dev', firstSight: false };
const now = new Date('2026-11-22T12:00:00Z');
const ids = (calls: Array<{ spec: HandlerSpec }>) => calls.map((call) => call.spec.id);

describe('planning a cause', () => {
  it('on creation: create handlers that match, and field handlers whose field is set', () => {
    const created = object({ mode: 'slow' });
    const plan = planCause(created, detectCause(created, {}, context), handlers, undefined, now);
    assert.deepEqual(ids(plan.due), ['on_create', 'on_field']);
    assert.deepEqual(plan.due[1]?.new, 'slow', 'field handlers see the field');
    assert.equal(plan.due[1]?.old, undefined);
  });

  it('on creation with no handler to call: recorded when an update handler awaits its changes, not otherwise', () => {
    const created = object({ mode: 'slow' });
    const cause = detectCause(created, {}, context);
    const updateOnly = [handler('on_update', 'update', { filters: { labels: { app: 'web' } } })];
    const matching = planCause(object({}, { app: 'web' }), cause, updateOnly, undefined, now);
    assert.deepEqual([matching.due, matching.awaitsChanges], [[], true]);
    const other = planCause(created, cause, updateOnly, undefined, now);
    assert.equal(other.awaitsChanges, false, 'its filters do not match: untouched, as new when they do');
    const deleteOnly = planCause(created, cause, [handler('on_delete', 'delete')], undefined, now);
    assert.equal(deleteOnly.awaitsChanges, false, 'a deletion needs no record');
  });

  it('on update: update handlers, and field-scoped ones only when their field changed as filtered', () => {
    const before = object({ mode: 'slow', size: 1 });
    const modeChanged = object({ mode: 'fast', size: 1 });
    const plan = planCause(
      modeChanged,
      detectCause(modeChanged, stored(before), context),
      handlers,
      undefined,
      now,
    );
    assert.deepEqual(ids(plan.due), ['on_update', 'on_field', 'to_fast']);
    const toFast = plan.due[2];
    assert.deepEqual(
      [toFast?.old, toFast?.new, toFast?.diff],
      ['slow', 'fast', [['change', [], 'slow', 'fast']]],
    );

    const sizeChanged = object({ mode: 'slow', size: 2 });
    const other = planCause(
      sizeChanged,
      detectCause(sizeChanged, stored(before), context),
      handlers,
      undefined,
      now,
    );
    assert.deepEqual(ids(other.due), ['on_update']);
    assert.deepEqual(other.due[0]?.diff, [['change', ['spec', 'size'], 1, 2]]);
  });

  it('on deletion and on resumption: only their own kinds', () => {
    const deleting = object({});
    deleting.metadata.deletionTimestamp = '2026-11-22T11:00:00Z';
    assert.deepEqual(
      ids(
        planCause(deleting, detectCause(deleting, stored(deleting), context), handlers, undefined, now).due,
      ),
      ['on_delete'],
    );
    const firstSeenDeleting = detectCause(deleting, stored(deleting), { ...context, firstSight: true });
    const withDeleted = [...handlers, handler('resume_deleted', 'resume', { options: { deleted: true } })];
    assert.deepEqual(ids(planCause(deleting, firstSeenDeleting, withDeleted, undefined, now).due), [
      'on_delete',
      'resume_deleted',
    ]);
    assert.deepEqual(
      ids(
        planCause(deleting, detectCause(deleting, stored(deleting), context), withDeleted, undefined, now)
          .due,
      ),
      ['on_delete'],
      'only on first sight',
    );
    const existing = object({});
    const resumed = detectCause(existing, stored(existing), { ...context, firstSight: true });
    assert.deepEqual(ids(planCause(existing, resumed, handlers, undefined, now).due), ['on_resume']);
  });

  it('mixes resume handlers into the creation or update of an object that existed before the start, as Kopf', () => {
    const atStart = { ...context, firstSight: true, existedAtStart: true };
    const created = object({ mode: 'slow' });
    assert.deepEqual(
      ids(planCause(created, detectCause(created, {}, atStart), handlers, undefined, now).due),
      ['on_create', 'on_resume', 'on_field'],
    );
    const changed = object({ mode: 'fast' });
    const update = detectCause(changed, stored(created), atStart);
    const due = planCause(changed, update, handlers, undefined, now).due;
    assert.deepEqual(ids(due), ['on_update', 'on_resume', 'on_field', 'to_fast']);
    const resume = due.find(({ spec }) => spec.id === 'on_resume');
    assert.equal(resume?.diff, undefined, 'a resume handler sees no diff');
    assert.deepEqual(
      ids(
        planCause(
          created,
          detectCause(created, {}, { ...context, firstSight: true }),
          handlers,
          undefined,
          now,
        ).due,
      ),
      ['on_create', 'on_field'],
      'an object created after the start is not resumed',
    );
  });

  it('filters by labels before any call', () => {
    const web = object({}, { app: 'web' });
    assert.deepEqual(ids(planCause(web, detectCause(web, {}, context), handlers, undefined, now).due), [
      'on_create',
      'web_only',
    ]);
  });

  it('follows the progress kept on the object: done, delayed, and due again', () => {
    const created = object({});
    const cause = detectCause(created, {}, context);
    const progress = {
      'svc/on_create': { started: '2026-11-22T11:59:00Z', retries: 1, delayedUntil: '2026-11-22T12:00:30Z' },
    };
    const delayed = planCause(created, cause, [handlers[0] as (typeof handlers)[0]], progress, now);
    assert.deepEqual(ids(delayed.due), []);
    assert.equal(delayed.wakeInMs, 30_000);
    const later = planCause(
      created,
      cause,
      [handlers[0] as (typeof handlers)[0]],
      progress,
      new Date('2026-11-22T12:00:31Z'),
    );
    assert.deepEqual(ids(later.due), ['on_create']);
    assert.equal(later.due[0]?.progress.retries, 1);
    const done = planCause(
      created,
      cause,
      [handlers[0] as (typeof handlers)[0]],
      { 'svc/on_create': { started: 'x', retries: 0, success: true } },
      now,
    );
    assert.deepEqual([ids(done.due), ids(done.concerned)], [[], ['on_create']]);
  });

  it('gives a handler up when its retries or its time run out', () => {
    const created = object({});
    const cause = detectCause(created, {}, context);
    const limited = [
      handler('few', 'create', { options: { retries: 2 } }),
      handler('brief', 'create', { options: { timeout: 60 } }),
    ];
    const progress = {
      'svc/few': { started: '2026-11-22T11:59:59Z', retries: 2 },
      'svc/brief': { started: '2026-11-22T11:58:00Z', retries: 1 },
    };
    const plan = planCause(created, cause, limited, progress, now);
    assert.deepEqual(ids(plan.due), []);
    assert.deepEqual(
      plan.givenUp.map((given) => given.message),
      ['gave up after 2 retries', 'gave up after its 60s timeout'],
    );
  });
});

describe('causes of generated changes (property-based)', () => {
  /** A spec as it comes off the wire: keys that name Object.prototype's members are its own keys. */
  const wireSpec = fc
    .tuple(
      jsonTree,
      fc.dictionary(fc.constantFrom(...PROTOTYPE_MEMBERS), jsonValue, { maxKeys: 2, noNullPrototype: true }),
    )
    // Through JSON text, as a watch delivers it: `__proto__` becomes an own key.
    .map(([tree, members]) =>
      JSON.parse(
        `{${[JSON.stringify(tree).slice(1, -1), JSON.stringify(members).slice(1, -1)].filter(Boolean).join(',')}}`,
      ),
    );
  /** The value at `path` of `value`, own keys only: undefined where it has none. */
  const at = (value: unknown, path: readonly string[]) =>
    path.reduce<unknown>(
      (current, key) => (isObject(current) && Object.hasOwn(current, key) ? current[key] : undefined),
      value,
    );

  it('detects an update exactly when the essence changed, and its diff says what each changed part was and is', () => {
    fc.assert(
      fc.property(kubeObject({ spec: wireSpec }), wireSpec, fc.boolean(), (before, spec, changed) => {
        const after = { ...before, spec: changed ? spec : before.spec };
        const cause = detectCause(after, stored(before), context);
        const [old, current] = [essenceOf(before, 'causeway.dev'), essenceOf(after, 'causeway.dev')];
        assert.equal(cause.reason, serializeEssence(old) === serializeEssence(current) ? 'none' : 'update');
        for (const [operation, path, was, is] of cause.diff) {
          assert.deepEqual([was, is], [at(old, path), at(current, path)], `${operation} ${path.join('.')}`);
          assert.equal(operation, was === undefined ? 'add' : is === undefined ? 'remove' : 'change');
        }
      }),
      { numRuns: 1000 },
    );
  });
});
