import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HandlerSpec, KubernetesObject } from '../../protocol/index.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import type { Candidate } from '../reactor/model.ts';
import { essenceOf, serializeEssence } from '../state/essence.ts';
import type { ProgressMap } from '../state/storage.ts';
import { type ExplainInput, explain } from './explain.ts';
import { explanationText } from './text.ts';

const NOW = new Date('2026-11-27T08:00:00.000Z');
const RESOURCE = { name: 'kopfexamples' };
const { statusKey, finalizer, annotationPrefix } = DEFAULT_IDENTITY;

function handler(id: string, kind: HandlerSpec['kind'], extra: Partial<HandlerSpec> = {}): Candidate<string> {
  return { service: 'kopfexample', spec: { id, kind, resource: RESOURCE, ...extra } };
}

function object(fields: Partial<KubernetesObject['metadata']> = {}, status = {}): KubernetesObject {
  return {
    apiVersion: 'kopf.dev/v1',
    kind: 'KopfExample',
    metadata: { name: 'one', namespace: 'default', uid: 'uid-1', resourceVersion: '7', ...fields },
    spec: { field: 'x' },
    status,
  };
}

/** The object with the gateway's record of it handled as it is now, and `progress` on its current change. */
function recorded(of: KubernetesObject, progress?: ProgressMap, result: Record<string, unknown> = {}) {
  const essence = serializeEssence(essenceOf(of, annotationPrefix));
  return { ...of, status: { ...result, [statusKey]: { essence, ...(progress ? { progress } : {}) } } };
}

function explained(input: Partial<ExplainInput> & Pick<ExplainInput, 'object' | 'handlers'>) {
  return explain({
    resource: 'kopfexamples.kopf.dev',
    identity: DEFAULT_IDENTITY,
    stateIn: 'status',
    events: [],
    now: NOW,
    ...input,
  });
}

describe('causeway explain, from an object, its stored state and its handlers', () => {
  it('says a new object is to be created, its create handler due, in the versioned shape', () => {
    const create = handler('create_fn', 'create');
    const result = explained({ object: object(), handlers: [create] });
    assert.equal(result.apiVersion, 'causeway.dev/v1');
    assert.equal(result.kind, 'Explanation');
    assert.deepEqual(result.object, {
      resource: 'kopfexamples.kopf.dev',
      namespace: 'default',
      name: 'one',
      uid: 'uid-1',
      resourceVersion: '7',
      deleting: false,
    });
    assert.equal(result.cause, 'create');
    assert.deepEqual(result.state, { in: 'status', handled: false });
    assert.deepEqual(result.handlers, [
      {
        id: 'create_fn',
        kind: 'create',
        service: 'kopfexample',
        match: 'matched',
        status: 'due',
        concerned: true,
        due: true,
        resultKey: 'status.create_fn',
        hasResult: false,
        holdsFinalizer: false,
      },
    ]);
  });

  it('says a handled object has nothing to do, and where its result is', () => {
    const done = recorded(object(), undefined, { create_fn: { message: 'hello' } });
    const [create] = explained({ object: done, handlers: [handler('create_fn', 'create')] }).handlers;
    assert.equal(explained({ object: done, handlers: [] }).cause, 'none');
    assert.equal(create?.status, 'idle');
    assert.equal(create?.due, false);
    assert.equal(create?.hasResult, true);
    assert.equal(create?.progress, undefined);
  });

  it('says a handler failing temporarily is retrying: its retries, next attempt and message', () => {
    const progress = {
      create_fn: {
        started: '2026-11-27T07:59:00.000Z',
        retries: 2,
        delayedUntil: '2026-11-27T09:00:00.000Z',
        message: 'not yet',
      },
    };
    const waiting = { ...object(), status: recorded(object(), progress).status };
    // The record says the object was handled before this change: the progress is on its update.
    const changed = { ...waiting, spec: { field: 'y' } };
    const result = explained({ object: changed, handlers: [handler('create_fn', 'update')] });
    assert.equal(result.cause, 'update');
    assert.deepEqual(result.changed, ['spec.field']);
    assert.deepEqual(
      {
        status: result.handlers[0]?.status,
        due: result.handlers[0]?.due,
        progress: result.handlers[0]?.progress,
      },
      {
        status: 'retrying',
        due: false,
        progress: {
          retries: 2,
          started: '2026-11-27T07:59:00.000Z',
          nextAttempt: '2026-11-27T09:00:00.000Z',
          message: 'not yet',
        },
      },
    );
  });

  it("tells two services' handlers of one id apart: each one's progress, and its result's own place", () => {
    const of = (service: string): Candidate<string> => ({ ...handler('create_fn', 'create'), service });
    const started = NOW.toISOString();
    // A new object: billing's create_fn failed once, audit's succeeded and its result is in its place.
    const pending = object(
      {},
      {
        [statusKey]: {
          results: { audit: { create_fn: { ok: true } } },
          progress: {
            billing: { create_fn: { started, retries: 1, message: 'not yet' } },
            audit: { create_fn: { started, retries: 0, success: true } },
          },
        },
      },
    );
    const [billing, audit] = explained({ object: pending, handlers: [of('billing'), of('audit')] }).handlers;
    assert.deepEqual(
      [billing?.status, billing?.progress?.retries, billing?.resultKey, billing?.hasResult],
      ['due', 1, 'status.causeway.results.billing.create_fn', false],
    );
    assert.deepEqual(
      [audit?.service, audit?.status, audit?.resultKey, audit?.hasResult],
      ['audit', 'succeeded', 'status.causeway.results.audit.create_fn', true],
    );
  });

  it('says a handler failed: permanently by its progress, out of retries by its options, or by the last event once its progress is purged', () => {
    const changed = (progress: ProgressMap) => ({
      ...recorded(object(), progress),
      spec: { field: 'y' },
    });
    const failed = changed({ a: { started: NOW.toISOString(), retries: 0, failure: true, message: 'no' } });
    assert.equal(
      explained({ object: failed, handlers: [handler('a', 'update')] }).handlers[0]?.status,
      'failed',
    );
    const spent = changed({ a: { started: NOW.toISOString(), retries: 3 } });
    const limited = handler('a', 'update', { options: { retries: 3 } });
    assert.equal(explained({ object: spent, handlers: [limited] }).handlers[0]?.status, 'failed');
    const events = [
      { reason: 'HandlerRetrying', message: 'a: not yet', time: '2026-11-27T07:00:00Z' },
      { reason: 'HandlerFailed', message: 'a failed permanently: no', time: '2026-11-27T07:01:00Z' },
      { reason: 'HandlerFailed', message: 'ab failed permanently: other', time: '2026-11-27T07:02:00Z' },
      { reason: 'Logging', message: 'a said something', time: '2026-11-27T07:03:00Z' },
    ];
    const [purged] = explained({
      object: recorded(object()),
      handlers: [handler('a', 'create')],
      events,
    }).handlers;
    assert.deepEqual(purged?.lastEvent, events[1]);
    assert.equal(purged?.status, 'idle');
  });

  it("says an object in the gateway's own namespace is handled by no function service, and why", () => {
    const handlers = [
      handler('create_fn', 'create'),
      handler('by_scope', 'create', { filters: { namespaces: ['*'] } }),
    ];
    const own = explained({
      object: object({ namespace: 'causeway-system' }),
      handlers,
      ownNamespace: 'causeway-system',
    });
    const reason =
      "namespace causeway-system is the gateway's own, which it serves to no function service (unless run with --serve-own-namespace)";
    assert.deepEqual(
      own.handlers.map(({ id, match, filter, reason, status, due }) => ({
        id,
        match,
        filter,
        reason,
        status,
        due,
      })),
      handlers.map(({ spec }) => ({
        id: spec.id,
        match: 'filtered',
        filter: 'namespaces',
        reason,
        status: 'filtered',
        due: false,
      })),
    );
    assert.equal(own.finalizer.needed, false);
    const elsewhere = explained({
      object: object({ namespace: 'team-a' }),
      handlers,
      ownNamespace: 'causeway-system',
    });
    assert.deepEqual(
      elsewhere.handlers.map(({ match, status }) => ({ match, status })),
      [
        { match: 'matched', status: 'due' },
        { match: 'matched', status: 'due' },
      ],
    );
  });

  it('says which filter leaves a handler out, and that a when callback cannot be judged offline', () => {
    const labelled = object({ labels: { app: 'db' } });
    const handlers = [
      handler('by_label', 'create', { filters: { labels: { app: 'web' } } }),
      handler('by_annotation', 'create', { filters: { annotations: { owner: { present: true } } } }),
      handler('by_field', 'create', { filters: { field: 'spec.field', value: { equals: 'z' } } }),
      handler('by_scope', 'create', { filters: { namespaces: ['team-*'] } }),
      handler('by_callback', 'create', { filters: { labels: { app: 'db' }, when: true } }),
    ];
    const result = explained({ object: labelled, handlers });
    assert.deepEqual(
      result.handlers.map(({ id, match, filter, reason, status }) => ({ id, match, filter, reason, status })),
      [
        {
          id: 'by_label',
          match: 'filtered',
          filter: 'labels',
          reason: 'label app: wants "web", has "db"',
          status: 'filtered',
        },
        {
          id: 'by_annotation',
          match: 'filtered',
          filter: 'annotations',
          reason: 'annotation owner: wants it present, has none',
          status: 'filtered',
        },
        {
          id: 'by_field',
          match: 'filtered',
          filter: 'field',
          reason: 'field spec.field: wants "z", has another value (not shown)',
          status: 'filtered',
        },
        {
          id: 'by_scope',
          match: 'filtered',
          filter: 'namespaces',
          reason: "namespace default is not among team-* (its service's scope)",
          status: 'filtered',
        },
        {
          id: 'by_callback',
          match: 'callback',
          filter: undefined,
          reason: 'a when callback decides too, in the function service: it cannot be evaluated offline',
          status: 'due',
        },
      ],
    );
  });

  it('says an object being deleted waits for its delete handler, which holds the finalizer', () => {
    const progress = {
      delete_fn: {
        started: NOW.toISOString(),
        retries: 1,
        delayedUntil: '2026-11-27T09:00:00.000Z',
        message: 'wait',
      },
    };
    const deleting = recorded(
      object({ deletionTimestamp: NOW.toISOString(), finalizers: [finalizer] }),
      progress,
    );
    const handlers = [handler('create_fn', 'create'), handler('delete_fn', 'delete')];
    const result = explained({ object: deleting, handlers });
    assert.equal(result.cause, 'delete');
    assert.equal(result.object.deleting, true);
    assert.deepEqual(result.finalizer, { name: finalizer, present: true, needed: true });
    const [create, remove] = result.handlers;
    assert.deepEqual(
      [create?.status, create?.holdsFinalizer, remove?.status, remove?.holdsFinalizer, remove?.resultKey],
      ['idle', false, 'retrying', true, undefined],
    );
  });

  it('tells it in text: the cause, the finalizer, a row per handler, and why', () => {
    const owner = { replica: 'gw-a', sharding: false, members: ['gw-a', 'gw-b'] };
    const text = explanationText(
      explained({
        object: object({ labels: { app: 'db' } }),
        handlers: [
          handler('create_fn', 'create'),
          handler('web_only', 'create', { filters: { labels: { app: 'web' } } }),
        ],
        owner,
      }),
    );
    assert.match(text, /^kopfexamples\.kopf\.dev default\/one\n/);
    assert.match(text, /cause: +create/);
    assert.match(text, /finalizer: +causeway\.dev\/finalizer: absent, not needed/);
    assert.match(text, /owner: +gw-a \(the leader\) of 2 replica\(s\): gw-a, gw-b/);
    assert.match(text, /HANDLER +KIND +SERVICE +STATUS +MATCH/);
    assert.match(text, /create_fn +create +kopfexample +due +matched +- +- +status\.create_fn \(none yet\)/);
    assert.match(text, /web_only: label app: wants "web", has "db"/);
  });

  it('prints what services chose as text: a control character escaped, never a terminal sequence or a line of its own', () => {
    const text = explanationText(
      explained({
        object: object(),
        handlers: [handler('evil\u001b[2J', 'create'), handler('forged\nHANDLER', 'create')],
      }),
    );
    assert.equal(/\p{Cc}/u.test(text.replaceAll('\n', '')), false, 'no control character but line ends');
    assert.match(text, /evil\\u001b\[2J/);
    assert.match(text, /forged\\nHANDLER/);
  });
});
