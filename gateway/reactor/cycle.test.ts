/**
 * The cycle's decisions and writes, with a fake API behind the ReactorApi and handlers answering from a
 * table: what the reactor calls and what it writes, in order, for the situations the e2e tests meet.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { KOPF_EXAMPLES } from '../../functions/test-helpers.ts';
import type { HandlerSpec, KubernetesObject, Outcome } from '../../protocol/index.ts';
import { equal, isObject, jsonCopy, mergePatched } from '../../protocol/json.ts';
import { jsonTree, kubeObject, oddSpec } from '../../test/support/arbitraries.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import { ApiError, StaleWrite } from '../kube/errors.ts';
import { createLogger } from '../logging.ts';
import type { JsonPatch, ObjectChanges } from '../state/changes.ts';
import { type Progress, StateStorage } from '../state/storage.ts';
import type { ReactorApi } from './api.ts';
import type { CallHandlers } from './calls.ts';
import { ResourceReactor } from './cycle.ts';
import type { ServedResource } from './model.ts';

const quiet = createLogger({ sink: { write: () => {} } });
const FINALIZER = DEFAULT_IDENTITY.finalizer;
const resource = { ...KOPF_EXAMPLES, subresources: ['status'] } as ServedResource['resource'];

/** One object in a fake API server: every write is recorded and bumps the resourceVersion. */
class FakeApi implements ReactorApi {
  object: KubernetesObject;
  readonly writes: string[] = [];
  /** The status schema prunes unknown fields: what a merge patch puts under these keys is dropped. */
  prunedStatusKeys: string[] = [];
  /** The next JSON patch fails as if the object had changed meanwhile. */
  raceNextJsonPatch = false;
  gone = false;

  constructor(object: KubernetesObject) {
    this.object = structuredClone(object);
  }

  async jsonPatch(_target: KubernetesObject, patch: JsonPatch): Promise<KubernetesObject> {
    this.#exists();
    const race = this.raceNextJsonPatch;
    this.raceNextJsonPatch = false;
    for (const op of patch) {
      if (op.op === 'test' && (race || !equal(pointer(this.object, op.path), op.value))) {
        // As kube/patcher.ts names the apiserver's 422 for a patch that does not apply.
        throw new StaleWrite(`PATCH kopfexamples/a failed: 422 Invalid (a test of ${op.path} failed)`);
      }
    }
    const finalizers = [...(this.object.metadata.finalizers ?? [])];
    for (const op of patch) {
      if (op.path.startsWith('/metadata/finalizers')) {
        const index = op.path.split('/')[3];
        if (op.op === 'add') {
          if (index === undefined) finalizers.splice(0, finalizers.length, ...(op.value as string[]));
          else finalizers.push(op.value as string);
        }
        if (op.op === 'remove') finalizers.splice(Number(index), 1);
      }
    }
    this.writes.push(`json ${JSON.stringify(patch.filter((op) => op.op !== 'test'))}`);
    return this.#save({ ...this.object, metadata: { ...this.object.metadata, finalizers } });
  }

  async applyChanges(_target: KubernetesObject, changes: ObjectChanges) {
    this.#exists();
    let written: KubernetesObject | undefined;
    if (Object.keys(changes.status).length > 0) {
      const status = Object.fromEntries(
        Object.entries(changes.status).filter(([key]) => !this.prunedStatusKeys.includes(key)),
      );
      this.writes.push(`status ${JSON.stringify(changes.status)}`);
      written = this.#save(mergePatched(this.object, { status }) as KubernetesObject);
    }
    if (Object.keys(changes.object).length > 0) {
      this.writes.push(`object ${JSON.stringify(changes.object)}`);
      written = this.#save(mergePatched(this.object, changes.object) as KubernetesObject);
    }
    return written;
  }

  /** The next apply fails as if the child had changed since the scope read it. */
  raceNextApply = false;
  /** Children the apiserver refuses, by name: RBAC, admission, another field manager. */
  readonly refused = new Map<string, ApiError>();

  async applyObject(object: { kind: string; metadata: { name: string } }) {
    const refusal = this.refused.get(object.metadata.name);
    if (refusal) throw refusal;
    if (this.raceNextApply) {
      this.raceNextApply = false;
      throw new ApiError('PATCH', `configmaps/${object.metadata.name}`, 409, {
        kind: 'Status',
        reason: 'Conflict',
        message: `Operation cannot be fulfilled on configmaps "${object.metadata.name}": the object has been modified; please apply your changes to the latest version and try again`,
      });
    }
    this.writes.push(`apply ${object.kind}/${object.metadata.name}`);
    return undefined;
  }

  async postEvents(_object: KubernetesObject, events: Array<{ reason: string }>) {
    this.writes.push(`events ${events.map((event) => event.reason).join(',')}`);
  }

  async read() {
    return this.gone ? undefined : this.object;
  }

  #exists(): void {
    if (this.gone) throw new ApiError('PATCH', 'kopfexamples/a', 404, { kind: 'Status', reason: 'NotFound' });
  }

  #save(object: KubernetesObject): KubernetesObject {
    const resourceVersion = String(Number(object.metadata.resourceVersion) + 1);
    this.object = { ...object, metadata: { ...object.metadata, resourceVersion } };
    return structuredClone(this.object);
  }
}

function pointer(value: unknown, path: string): unknown {
  return path
    .split('/')
    .slice(1)
    .reduce<unknown>(
      (at, key) => (isObject(at) || Array.isArray(at) ? (at as Record<string, unknown>)[key] : undefined),
      value,
    );
}

/** Handlers that answer from a table, recording each call as `reason:id`. */
function handlers(answers: Record<string, Outcome[]>) {
  const calls: string[] = [];
  const call: CallHandlers<string> = async (due, subject) => ({
    outcomes: due.map((d) => {
      calls.push(`${subject.reason}:${d.spec.id}`);
      const outcome = answers[d.spec.id]?.shift() ?? { status: 'success' };
      return [d, outcome];
    }),
    memoUpdates: [],
  });
  return { calls, call };
}

function reactor(
  api: FakeApi,
  specs: Array<Pick<HandlerSpec, 'id' | 'kind'> & Partial<HandlerSpec>>,
  call: CallHandlers<string>,
) {
  const served: ServedResource<string> = {
    resource,
    storage: new StateStorage('status', DEFAULT_IDENTITY),
    bindings: [
      { service: 'functions', handlers: specs.map((spec) => ({ resource: { name: 'kex' }, ...spec })) },
    ],
  };
  return {
    served,
    reactor: new ResourceReactor({
      served,
      api,
      call,
      identity: DEFAULT_IDENTITY,
      logger: quiet,
      retryDelaysS: [1, 2],
      conflictRetryMs: 100,
    }),
  };
}

const kex = (metadata: Partial<KubernetesObject['metadata']> = {}): KubernetesObject => ({
  apiVersion: 'kopf.dev/v1',
  kind: 'KopfExample',
  metadata: { name: 'a', namespace: 'ns', uid: 'u1', resourceVersion: '10', ...metadata },
  spec: { field: 'value' },
});

const LIFECYCLE = [
  { id: 'create_fn', kind: 'create' as const },
  { id: 'delete_fn', kind: 'delete' as const },
];

describe('a reactor cycle', () => {
  it('holds a new object with the finalizer, calls create once, and writes result and record in one write', async () => {
    const api = new FakeApi(kex());
    const { calls, call } = handlers({ create_fn: [{ status: 'success', result: { ok: true } }] });
    const { reactor: cycle } = reactor(api, LIFECYCLE, call);
    const outcome = await cycle.run(api.object);
    assert.deepEqual(calls, ['create:create_fn']);
    assert.equal(api.writes.length, 2);
    assert.match(api.writes[0] as string, /^json \[\{"op":"add","path":"\/metadata\/finalizers"/);
    assert.match(api.writes[1] as string, /^status \{"create_fn":\{"ok":true\},"causeway":\{"essence":/);
    assert.deepEqual(outcome, { written: api.object.metadata.resourceVersion });

    const again = await cycle.run(api.object);
    assert.deepEqual([calls.length, api.writes.length, again], [1, 2, {}], 'a handled object costs nothing');
  });

  it('keeps the progress of a temporary failure on the object and runs again after its delay', async () => {
    const api = new FakeApi(kex({ finalizers: [FINALIZER] }));
    const { calls, call } = handlers({ create_fn: [{ status: 'temporary', message: 'not yet', delay: 5 }] });
    const { reactor: cycle } = reactor(api, LIFECYCLE, call);
    const outcome = await cycle.run(api.object);
    assert.equal(outcome.retryAfterMs, 5000);
    const state = api.object.status?.causeway as {
      progress?: Record<string, Record<string, { retries: number }>>;
    };
    assert.equal(state.progress?.functions?.create_fn?.retries, 1, 'kept by service, then by handler');
    assert.deepEqual(api.writes.at(-1), 'events HandlerRetrying');

    await cycle.run(api.object); // its delay is not over: no call
    assert.deepEqual(calls, ['create:create_fn']);
  });

  it('calls the delete handler on deletion, then takes the finalizer off and writes nothing else', async () => {
    const api = new FakeApi(kex({ finalizers: [FINALIZER] }));
    const { calls, call } = handlers({});
    const { reactor: cycle } = reactor(api, LIFECYCLE, call);
    await cycle.run(api.object);
    api.writes.length = 0;
    api.object = {
      ...api.object,
      metadata: { ...api.object.metadata, deletionTimestamp: '2026-11-23T00:00:00Z' },
    };
    await cycle.run(api.object);
    assert.deepEqual(calls, ['create:create_fn', 'delete:delete_fn']);
    assert.deepEqual(api.writes, ['json [{"op":"remove","path":"/metadata/finalizers/0"}]']);
    assert.deepEqual(api.object.metadata.finalizers, []);
  });

  it('does not call the delete handler again when taking the finalizer off lost a race', async () => {
    const api = new FakeApi(kex({ finalizers: [FINALIZER], deletionTimestamp: '2026-11-23T00:00:00Z' }));
    const { calls, call } = handlers({});
    const { reactor: cycle } = reactor(api, LIFECYCLE, call);
    api.raceNextJsonPatch = true;
    assert.deepEqual(await cycle.run(api.object), { retryAfterMs: 100 });
    await cycle.run(api.object);
    assert.deepEqual(calls, ['delete:delete_fn'], 'called once');
    assert.deepEqual(api.object.metadata.finalizers, []);
  });

  it('takes off a finalizer of its own that no handler needs any more, with no call', async () => {
    const api = new FakeApi(kex({ finalizers: [FINALIZER] }));
    const { calls, call } = handlers({});
    const { reactor: cycle } = reactor(api, [{ id: 'event_fn', kind: 'event' }], call);
    const outcome = await cycle.run(api.object);
    assert.deepEqual(calls, []);
    assert.deepEqual(api.writes, ['json [{"op":"remove","path":"/metadata/finalizers/0"}]']);
    assert.deepEqual(outcome, { written: api.object.metadata.resourceVersion });
  });

  it('moves its state to annotations when the status drops the record, and handles the object once', async () => {
    const api = new FakeApi(kex());
    api.prunedStatusKeys = ['causeway'];
    const { calls, call } = handlers({});
    const { served, reactor: cycle } = reactor(api, [{ id: 'create_fn', kind: 'create' }], call);
    await cycle.run(api.object);
    assert.equal(served.storage.location, 'annotations');
    assert.match(
      api.writes.at(-1) as string,
      /^object \{"metadata":\{"annotations":\{"causeway.dev\/last-handled":/,
    );
    await cycle.run(api.object);
    assert.deepEqual(calls, ['create:create_fn']);
  });

  it('records nothing for an object that is gone meanwhile', async () => {
    const api = new FakeApi(kex({ finalizers: [FINALIZER] }));
    const { call } = handlers({});
    const { reactor: cycle } = reactor(api, LIFECYCLE, call);
    api.gone = true;
    assert.deepEqual(await cycle.run(api.object), {});
  });

  it('applies the objects a handler asks for before recording its success', async () => {
    const api = new FakeApi(kex());
    const child = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'child' } };
    const { call } = handlers({ create_fn: [{ status: 'success', apply: [child] }] });
    const { reactor: cycle } = reactor(api, [{ id: 'create_fn', kind: 'create' }], call);
    await cycle.run(api.object);
    assert.equal(api.writes[0], 'apply ConfigMap/child');
    assert.match(api.writes[1] as string, /^status /);
  });

  it('records nothing when a child changed since it was read, and looks again soon', async () => {
    const api = new FakeApi(kex({ finalizers: [FINALIZER] }));
    const child = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'child' } };
    const applying: Outcome = { status: 'success', apply: [child] };
    const { call, calls } = handlers({ create_fn: [applying, applying] });
    const { reactor: cycle } = reactor(api, [{ id: 'create_fn', kind: 'create' }], call);
    api.raceNextApply = true;
    assert.deepEqual(await cycle.run(api.object), { retryAfterMs: 100 });
    assert.deepEqual(api.writes, [], 'nothing of the answer written');
    await cycle.run(api.object);
    assert.deepEqual(calls, ['create:create_fn', 'create:create_fn']);
    assert.equal(api.writes[0], 'apply ConfigMap/child');
  });
});

/**
 * Two services on one resource, `a` and `b`, each answering from a table by `service:id`; each call
 * records what the service was given of the memo and which status keys its patches may not set.
 */
function twoServices(answers: Record<string, Outcome[]>, memo: Record<string, Record<string, unknown>> = {}) {
  const calls: string[] = [];
  const seen: Array<{ service: string; memo: unknown; others: string[] }> = [];
  const call: CallHandlers<string> = async (due, subject) => {
    const services = [...new Set(due.map((d) => d.service))];
    for (const service of services) {
      seen.push({
        service,
        memo: jsonCopy(subject.memoOf?.(service)),
        others: [...subject.othersResults(service)],
      });
    }
    return {
      outcomes: due.map((d) => {
        calls.push(`${d.service}:${d.spec.id}`);
        return [d, answers[`${d.service}:${d.spec.id}`]?.shift() ?? { status: 'success' }];
      }),
      memoUpdates: services.flatMap((service) =>
        memo[service] ? [{ service, updates: memo[service] }] : [],
      ),
    };
  };
  return { calls, seen, call };
}

function sharedReactor(api: FakeApi, call: CallHandlers<string>, bOwns = ['create_fn']) {
  const spec = (id: string): HandlerSpec => ({ id, kind: 'create', resource: { name: 'kex' } });
  const served: ServedResource<string> = {
    resource,
    storage: new StateStorage('status', DEFAULT_IDENTITY),
    bindings: [
      { service: 'a', handlers: [spec('create_fn'), spec('own_fn')] },
      { service: 'b', handlers: bOwns.map(spec) },
    ],
  };
  return new ResourceReactor({
    served,
    api,
    call,
    identity: DEFAULT_IDENTITY,
    logger: quiet,
    retryDelaysS: [0, 2],
    conflictRetryMs: 100,
  });
}

describe("each service's state its own", () => {
  for (const [failing, done] of [
    ['a', 'b'],
    ['b', 'a'],
  ] as const) {
    it(`keeps the progress and results of two services' create_fn apart: ${failing} failing does not mark ${done}'s done, nor ${done}'s success ${failing}'s`, async () => {
      const api = new FakeApi(kex({ finalizers: [FINALIZER] }));
      const { calls, call } = twoServices({
        [`${failing}:create_fn`]: [
          { status: 'temporary', message: 'not yet', delay: 0 },
          { status: 'success', result: { by: failing } },
        ],
        [`${done}:create_fn`]: [{ status: 'success', result: { by: done } }],
      });
      const cycle = sharedReactor(api, call);
      await cycle.run(api.object);
      assert.deepEqual(calls.sort(), ['a:create_fn', 'a:own_fn', 'b:create_fn']);
      const state = () => jsonCopy(api.object.status?.causeway) as Record<string, Record<string, unknown>>;
      assert.deepEqual(state().results, { [done]: { create_fn: { by: done } } }, "in the gateway's record");
      const progress = state().progress as Record<string, Record<string, Progress>>;
      assert.equal(progress[done]?.create_fn?.success, true);
      assert.deepEqual(
        [progress[failing]?.create_fn?.retries, progress[failing]?.create_fn?.success],
        [1, undefined],
      );
      assert.equal(api.object.status?.create_fn, undefined, "status.create_fn is neither one's");

      await cycle.run(api.object);
      assert.deepEqual(calls.slice(3), [`${failing}:create_fn`], 'only the one that failed is called again');
      assert.deepEqual(state().results, { a: { create_fn: { by: 'a' } }, b: { create_fn: { by: 'b' } } });
      assert.equal(state().progress, undefined, 'handled: the progress purged');
      assert.equal(typeof state().essence, 'string');
    });
  }

  it("keeps a result at status.<id> when the id is its service's alone on the resource", async () => {
    const api = new FakeApi(kex({ finalizers: [FINALIZER] }));
    const { call } = twoServices({ 'a:own_fn': [{ status: 'success', result: { mine: true } }] });
    await sharedReactor(api, call, ['other_fn']).run(api.object);
    assert.deepEqual(jsonCopy(api.object.status?.own_fn), { mine: true });
  });

  it("tells each service the status keys of the others' results, and gives it its own memo only", async () => {
    const api = new FakeApi(kex({ finalizers: [FINALIZER] }));
    const again: Outcome[] = [{ status: 'temporary', message: 'again', delay: 0 }];
    const { seen, call } = twoServices(
      { 'a:create_fn': [...again], 'b:create_fn': [...again] },
      { a: { step: 'a1' }, b: { step: 'b1', secret: 'of b' } },
    );
    const cycle = sharedReactor(api, call, ['create_fn', 'b_fn']);
    await cycle.run(api.object);
    await cycle.run(api.object);
    const last = (service: string) => seen.filter((one) => one.service === service).at(-1);
    assert.deepEqual(last('a'), { service: 'a', memo: { step: 'a1' }, others: ['create_fn', 'b_fn'] });
    assert.deepEqual(last('b'), {
      service: 'b',
      memo: { step: 'b1', secret: 'of b' },
      others: ['create_fn', 'own_fn'],
    });
  });

  it('goes on after an upgrade with progress kept by id alone: no handler runs again, and the next write has it by service', async () => {
    const done = { started: '2026-11-23T00:00:00.000Z', retries: 0, success: true };
    const retrying = { started: '2026-11-23T00:00:00.000Z', retries: 1 };
    const api = new FakeApi({
      ...kex({ finalizers: [FINALIZER] }),
      status: { causeway: { progress: { create_fn: done, own_fn: retrying } } },
    });
    const { calls, call } = twoServices({
      'a:own_fn': [{ status: 'temporary', message: 'not yet', delay: 60 }],
    });
    await sharedReactor(api, call, ['other_fn']).run(api.object);
    assert.deepEqual(calls.sort(), ['a:own_fn', 'b:other_fn'], "a's create_fn, done, is not called again");
    assert.match(api.writes.at(-2) as string, /"progress":\{"create_fn":null,"own_fn":null,"a":\{/);
    const { progress } = jsonCopy(api.object.status?.causeway) as {
      progress: Record<string, Record<string, Progress>>;
    };
    assert.deepEqual(Object.keys(progress), ['a', 'b'], 'by service only: the records by id alone are gone');
    assert.deepEqual(progress.a?.create_fn, done);
    assert.deepEqual([progress.a?.own_fn?.retries, progress.a?.own_fn?.message], [2, 'not yet']);
    assert.equal(progress.b?.other_fn?.success, true);
  });
});

describe('a child that cannot be applied', () => {
  const child = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } });
  const forbidden = (name: string, retryAfterSeconds?: number) =>
    new ApiError(
      'PATCH',
      `configmaps/${name}`,
      retryAfterSeconds === undefined ? 403 : 429,
      { kind: 'Status', reason: 'Forbidden', message: `configmaps "${name}" is forbidden` },
      retryAfterSeconds,
    );

  it("fails its handler alone: the other service's result, child and patch land in the same cycle", async () => {
    const api = new FakeApi(kex({ finalizers: [FINALIZER] }));
    api.refused.set('bad', forbidden('bad'));
    const { calls, call } = twoServices({
      'a:create_fn': [
        {
          status: 'success',
          result: { by: 'a' },
          apply: [child('bad')],
          patch: { metadata: { labels: { a: 'x' } } },
        },
        { status: 'success', result: { by: 'a' }, apply: [child('bad')] },
      ],
      'b:create_fn': [{ status: 'success', result: { by: 'b' }, apply: [child('good')] }],
    });
    const cycle = sharedReactor(api, call);
    const outcome = await cycle.run(api.object);
    assert.ok(api.writes.includes('apply ConfigMap/good'));
    assert.ok(!api.writes.includes('apply ConfigMap/bad'));
    const state = () => jsonCopy(api.object.status?.causeway) as Record<string, Record<string, unknown>>;
    assert.deepEqual(state().results, { b: { create_fn: { by: 'b' } } });
    const progress = state().progress as Record<string, Record<string, Progress>>;
    assert.equal(progress.b?.create_fn?.success, true);
    assert.equal(progress.a?.own_fn?.success, true, "a's other handler is recorded too");
    const failed = progress.a?.create_fn;
    assert.match(
      failed?.message ?? '',
      /^its children could not be applied: PATCH configmaps\/bad failed: 403 Forbidden/,
    );
    assert.deepEqual([failed?.retries, failed?.success], [1, undefined]);
    assert.equal(outcome.retryAfterMs, 0, 'retried after the backoff a failed call waits (here none)');
    assert.equal(api.object.metadata.labels, undefined, "the failed handler's patch is not made");

    api.refused.clear();
    await cycle.run(api.object);
    assert.deepEqual(calls.slice(3), ['a:create_fn'], 'only the failed handler is called again');
    assert.deepEqual(state().results, { a: { create_fn: { by: 'a' } }, b: { create_fn: { by: 'b' } } });
  });

  it("is retried after a failed call's backoff, or the apiserver's Retry-After when it is later", async () => {
    const api = new FakeApi(kex({ finalizers: [FINALIZER] }));
    api.refused.set('bad', forbidden('bad'));
    api.refused.set('busy', forbidden('busy', 30));
    const { call } = handlers({
      create_fn: [{ status: 'success', apply: [child('bad')] }],
      update_fn: [{ status: 'success', apply: [child('busy')] }],
    });
    const { reactor: cycle } = reactor(api, [{ id: 'create_fn', kind: 'create' }], call);
    assert.equal((await cycle.run(api.object)).retryAfterMs, 1000);
    const { reactor: busy } = reactor(api, [{ id: 'update_fn', kind: 'create' }], call);
    assert.equal((await busy.run(api.object)).retryAfterMs, 30_000);
  });
});

describe('generated objects through a cycle (property-based)', () => {
  it('handles an object of any valid name, labels, unicode and large or deep spec once, storing the result as a merge patch does', async () => {
    await fc.assert(
      fc.asyncProperty(
        kubeObject({ spec: fc.oneof({ weight: 3, arbitrary: jsonTree }, oddSpec) }),
        jsonTree,
        async (object, result) => {
          const api = new FakeApi(object);
          const { calls, call } = handlers({ create_fn: [{ status: 'success', result }] });
          const { reactor: cycle } = reactor(api, LIFECYCLE, call);
          await cycle.run(api.object);
          assert.deepEqual(calls, ['create:create_fn']);
          // The result is written as a merge patch of the status: its nulls are not kept (as in Kopf).
          assert.deepEqual(
            jsonCopy(api.object.status?.create_fn ?? {}),
            jsonCopy(mergePatched(undefined, result)),
          );
          assert.deepEqual(jsonCopy(api.object.spec), jsonCopy(object.spec), 'the spec is as it was');
          const writes = api.writes.length;
          assert.deepEqual(await cycle.run(api.object), {}, 'handled: nothing more to do');
          assert.deepEqual([calls.length, api.writes.length], [1, writes]);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
