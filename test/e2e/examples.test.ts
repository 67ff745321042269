/** Every example, run for real, through the public testing kit (`causeway/testing`). */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it, type TestContext } from 'node:test';
import type { InvocationRequest, InvocationResponse, KubernetesObject } from 'causeway/protocol';
import { callActivities, callHandlers, type RunningOperator, runOperator } from 'causeway/testing';
import { parseManifests } from '../../gateway/kube/apply.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import { ApiError } from '../../gateway/kube/errors.ts';
import { testCluster, testNamespace } from '../support/cluster.ts';
import { kubectl } from '../support/kubectl.ts';
import { applyFile, eventually, kubeClient, progressOf } from '../support/operator.ts';

const example = (name: string, file: string) => new URL(`../../examples/${name}/${file}`, import.meta.url);
const CRD = example('01-minimal', 'crd.yaml');

/** The objects of an example's YAML, as they would be in `namespace`, with a made-up uid. */
function objectsOf(name: string, file: string, namespace = 'default'): KubernetesObject[] {
  return parseManifests(readFileSync(example(name, file), 'utf8')).map((object) => ({
    ...object,
    metadata: { ...object.metadata, namespace, uid: `uid-${object.metadata.name}` },
  }));
}

interface Fetchable {
  fetch(request: Request): Promise<Response> | Response;
}

interface Started extends RunningOperator {
  /** Stops once, however often it is called (also after the test). */
  stop(): Promise<void>;
}

/** Runs `op` on `namespace` of the test control plane until the test ends (or stop()). */
async function start(t: TestContext, op: Fetchable, namespace: string): Promise<Started> {
  const running = await runOperator(op, {
    namespaces: [namespace],
    kubeconfig: (await testCluster()).kubeconfigPath,
  });
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= running.stop();
    return stopped;
  };
  t.after(stop);
  return { gateway: running.gateway, logs: running.logs, stop };
}

interface Call {
  reason: InvocationRequest['reason'];
  name: string;
  /** Handler id to outcome status. */
  outcomes: Record<string, string>;
}

/** The operator, with every call the gateway made to it recorded once answered. */
function recorded(op: Fetchable): { service: Fetchable; calls: Call[] } {
  const calls: Call[] = [];
  const service = {
    async fetch(request: Request) {
      const isInvoke = new URL(request.url).pathname === '/causeway/v1/invoke';
      const asked = isInvoke ? ((await request.clone().json()) as InvocationRequest) : undefined;
      const response = await op.fetch(request);
      if (asked && response.ok) {
        const answer = (await response.clone().json()) as InvocationResponse;
        calls.push({
          reason: asked.reason,
          name: asked.body.metadata.name,
          outcomes: Object.fromEntries(Object.entries(answer.outcomes).map(([id, o]) => [id, o.status])),
        });
      }
      return response;
    },
  };
  return { service, calls };
}

const kopfExample = (namespace: string, name = '') =>
  `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples${name ? `/${name}` : ''}`;

async function readOrGone(client: KubeClient, path: string): Promise<KubernetesObject | undefined> {
  try {
    return await client.get<KubernetesObject>(path);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return undefined;
    throw error;
  }
}

/** The gateway's record on the object: the essence it handled, and its services' progress (progressOf). */
function causewayStatus(object: KubernetesObject): { essence?: string; progress?: Record<string, unknown> } {
  return (object.status?.causeway ?? {}) as { essence?: string; progress?: Record<string, unknown> };
}

/** What the gateway keeps on an object, wherever it keeps it. */
function gatewayState(object: KubernetesObject): unknown[] {
  const annotations = Object.keys(object.metadata.annotations ?? {}).filter((key) =>
    key.startsWith('causeway.dev/'),
  );
  return [...(object.status?.causeway === undefined ? [] : ['status.causeway']), ...annotations];
}

interface EventSummary {
  type: string;
  reason: string;
  message: string;
}

async function eventsAbout(client: KubeClient, namespace: string, name: string): Promise<EventSummary[]> {
  const list = await client.get<{ items: EventSummary[] }>(`/api/v1/namespaces/${namespace}/events`, {
    fieldSelector: `involvedObject.name=${name}`,
  });
  return list.items.map(({ type, reason, message }) => ({ type, reason, message }));
}

/** A pod (never run: the test cluster has no kubelet), with `metadata` and `spec` added. */
async function createPod(
  namespace: string,
  name: string,
  metadata: Partial<KubernetesObject['metadata']> = {},
  spec: Record<string, unknown> = {},
): Promise<void> {
  const client = await kubeClient();
  // Pods are admitted once the namespace has its default service account.
  await eventually('the default service account', async () =>
    (await readOrGone(client, `/api/v1/namespaces/${namespace}/serviceaccounts/default`)) ? true : undefined,
  );
  await client.request(`/api/v1/namespaces/${namespace}/pods`, {
    method: 'POST',
    body: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { ...metadata, name },
      spec: {
        automountServiceAccountToken: false,
        containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }],
        ...spec,
      },
    },
  });
}

const byReasonAndMessage = (a: EventSummary, b: EventSummary) =>
  `${a.reason} ${a.message}`.localeCompare(`${b.reason} ${b.message}`);

describe('examples/01-minimal', async () => {
  const { default: op } = await import(example('01-minimal', 'operator.ts').href);
  const [object] = parseManifests(readFileSync(example('01-minimal', 'object.yaml'), 'utf8')) as [
    KubernetesObject,
  ];

  it('greets in-process, with a synthetic cause', async () => {
    const response = await callHandlers(op, {
      reason: 'create',
      body: { ...object, metadata: { ...object.metadata, namespace: 'default', uid: 'uid-1' } },
    });
    assert.deepEqual(response.outcomes, {
      create_fn: { status: 'success', result: { message: 'hello kopf-example-1' } },
    });
    assert.match(response.logs[0]?.message ?? '', /creating kopf-example-1 with spec \{"duration":"1m"/);
  });

  it('greets kopf-example-1 on a real cluster', async (t) => {
    await applyFile(example('01-minimal', 'crd.yaml'));
    const namespace = await testNamespace(t);
    const running = await runOperator(op, {
      namespaces: [namespace],
      kubeconfig: (await testCluster()).kubeconfigPath,
    });
    t.after(() => running.stop());
    await applyFile(example('01-minimal', 'object.yaml'), namespace);
    const client = await kubeClient();
    const handled = await eventually('status.create_fn', async () => {
      const current = await client.get<KubernetesObject>(
        `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/kopf-example-1`,
      );
      return current.status?.create_fn === undefined ? undefined : current;
    });
    assert.deepEqual(handled.status?.create_fn, { message: 'hello kopf-example-1' });
    assert.ok(
      running.logs.some(
        (line) =>
          line.includes(`[${namespace}/kopf-example-1] handler succeeded `) &&
          line.includes(' handler=create_fn '),
      ),
    );
  });
});

describe('examples/03-exceptions', async () => {
  const { default: op } = await import(example('03-exceptions', 'operator.ts').href);
  const [object] = objectsOf('03-exceptions', 'object.yaml') as [KubernetesObject];

  it('answers a temporary, a permanent and an unexpected failure, in-process', async () => {
    const first = await callHandlers(op, { reason: 'create', body: object });
    const { buggy_fn: buggy, ...decided } = first.outcomes;
    assert.deepEqual(decided, {
      flaky_fn: { status: 'temporary', message: 'the backend is warming up (attempt 1)', delay: 1 },
      doomed_fn: {
        status: 'permanent',
        message: 'kopf-example-1 asks for something this operator can never do',
      },
    });
    assert.equal(buggy?.status, 'temporary', 'an unexpected error is retried...');
    assert.equal(buggy.delay, 1, '...after the backoff');
    assert.match(buggy.message, /Cannot destructure .*spec\.size/);
    const third = await callHandlers(op, {
      reason: 'create',
      body: object,
      handlers: ['flaky_fn'],
      retry: 2,
    });
    assert.equal(third.outcomes.flaky_fn?.status, 'success');
    assert.equal((third.outcomes.flaky_fn as { result?: { retries?: number } }).result?.retries, 2);
  });

  it('retries after the delays, gives up after the retries, records failures and warns in events', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const running = await start(t, op, namespace);
    await applyFile(example('03-exceptions', 'object.yaml'), namespace);
    const path = kopfExample(namespace, 'kopf-example-1');

    // The first attempts' outcomes go out in one write: every handler's progress at once.
    const progress = await eventually('the progress after the first attempts', async () => {
      const current = progressOf(await client.get<KubernetesObject>(path), 'exceptions');
      return (current?.flaky_fn?.retries ?? 0) >= 1 ? current : undefined;
    });
    assert.equal(progress.doomed_fn?.failure, true, JSON.stringify(progress));
    assert.equal(progress.doomed_fn?.message, 'kopf-example-1 asks for something this operator can never do');
    assert.equal(progress.flaky_fn?.message?.startsWith('the backend is warming up'), true);
    assert.ok(progress.flaky_fn?.delayedUntil, 'the temporary error delays the next attempt');
    assert.ok(
      (progress.buggy_fn?.retries ?? 0) >= 1 && !progress.buggy_fn?.failure,
      JSON.stringify(progress),
    );

    const handled = await eventually('kopf-example-1 handled', async () => {
      const current = await client.get<KubernetesObject>(path);
      return causewayStatus(current).essence === undefined ? undefined : current;
    });
    const result = handled.status?.flaky_fn as { retries: number; runtime: number };
    assert.equal(result.retries, 2, 'the third attempt succeeded');
    assert.ok(result.runtime >= 1900, `two delays of a second passed before it: ${result.runtime} ms`);
    assert.equal(handled.status?.doomed_fn, undefined, 'no result from a failed handler');
    assert.equal(handled.status?.buggy_fn, undefined, 'no result from a failed handler');
    assert.equal(causewayStatus(handled).progress, undefined, 'progress removed once every handler is done');

    const expected = { failed: 2, retrying: 2 + 3 };
    const events = await eventually('the Warning events', async () => {
      const found = await eventsAbout(client, namespace, 'kopf-example-1');
      const failed = found.filter((event) => event.reason === 'HandlerFailed').length;
      const retrying = found.filter((event) => event.reason === 'HandlerRetrying').length;
      return failed >= expected.failed && retrying >= expected.retrying ? found : undefined;
    });
    assert.ok(events.every((event) => event.type === 'Warning'));
    assert.deepEqual(
      events
        .filter((event) => event.reason === 'HandlerFailed')
        .map((event) => event.message)
        .sort(),
      [
        'buggy_fn gave up after 3 retries',
        'doomed_fn failed permanently: kopf-example-1 asks for something this operator can never do',
      ],
    );
    const retrying = events
      .filter((event) => event.reason === 'HandlerRetrying')
      .map((event) => event.message);
    assert.deepEqual(retrying.filter((message) => message.startsWith('flaky_fn')).sort(), [
      'flaky_fn: the backend is warming up (attempt 1)',
      'flaky_fn: the backend is warming up (attempt 2)',
    ]);
    assert.equal(retrying.filter((message) => /^buggy_fn: .*spec\.size/.test(message)).length, 3);
    assert.ok(
      running.logs.some(
        (line) =>
          line.includes(`[${namespace}/kopf-example-1] done on attempt 3,`) &&
          line.includes(' handler=flaky_fn '),
      ),
    );
  });
});

describe('examples/04-events', async () => {
  const { default: op } = await import(example('04-events', 'operator.ts').href);
  const [object] = objectsOf('04-events', 'object.yaml') as [KubernetesObject];
  const expected: EventSummary[] = [
    { type: 'Normal', reason: 'Greeting', message: 'hello kopf-example-1' },
    {
      type: 'Warning',
      reason: 'BadDuration',
      message: 'kopf-example-1: "half an hour" is not a duration such as 30s, 1m or 2h',
    },
    { type: 'Normal', reason: 'Note', message: 'a short note' },
  ];

  it('asks for its events in-process', async () => {
    const response = await callHandlers(op, { reason: 'create', body: object });
    assert.deepEqual(response.outcomes.create_fn, { status: 'success', events: expected });
  });

  it('posts them about the object, a long message cut to 1024 characters', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    await start(t, op, namespace);
    await applyFile(example('04-events', 'object.yaml'), namespace);
    const note = Array.from({ length: 300 }, (_, i) => `word${i}`).join(' ');
    assert.ok(note.length > 2000, 'twice what the API accepts');
    await client.request(kopfExample(namespace), {
      method: 'POST',
      body: { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name: 'wordy' }, spec: { note } },
    });

    const posted = await eventually('three events about kopf-example-1', async () => {
      const found = await eventsAbout(client, namespace, 'kopf-example-1');
      return found.length >= expected.length ? found : undefined;
    });
    assert.deepEqual(posted.sort(byReasonAndMessage), [...expected].sort(byReasonAndMessage));

    const wordy = await eventually('three events about wordy', async () => {
      const found = await eventsAbout(client, namespace, 'wordy');
      return found.length >= 3 ? found : undefined;
    });
    assert.equal(wordy.length, 3, JSON.stringify(wordy));
    const byReason = Object.fromEntries(wordy.map((event) => [event.reason, event]));
    assert.deepEqual(byReason.Greeting, { type: 'Normal', reason: 'Greeting', message: 'hello wordy' });
    assert.deepEqual(byReason.NoDuration, {
      type: 'Warning',
      reason: 'NoDuration',
      message: 'wordy says nothing of its duration: assuming 1m',
    });
    const long = byReason.Note;
    assert.equal(long?.type, 'Normal');
    assert.equal(long?.reason, 'Note');
    assert.equal(long?.message.length, 1024, 'cut to what the API accepts');
    assert.ok(long?.message.startsWith(note.slice(0, 1000)), 'the start of the note is kept');
  });
});

describe('examples/05-handlers', async () => {
  const { default: op } = await import(example('05-handlers', 'operator.ts').href);

  it('calls create, field, update, resume and delete handlers with what each is about', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const path = kopfExample(namespace, 'kopf-example-1');
    const lines = (running: Started, handler: string) =>
      running.logs.filter(
        (line) =>
          line.includes(`[${namespace}/kopf-example-1] `) &&
          line.includes(` handler=${handler} `) &&
          line.includes(' origin=function'),
      );

    const first = await start(t, op, namespace);
    await applyFile(example('05-handlers', 'object.yaml'), namespace);
    const created = await eventually('the create and field results', async () => {
      const current = await client.get<KubernetesObject>(path);
      return current.status?.create_fn && current.status['field_fn/spec.field'] ? current : undefined;
    });
    assert.deepEqual(created.status?.create_fn, { message: 'created kopf-example-1' });
    assert.deepEqual(created.status?.['field_fn/spec.field'], { change: [null, 'value'] }, 'appeared');
    assert.deepEqual(created.metadata.finalizers, ['causeway.dev/finalizer'], 'held for delete_fn');
    assert.equal(created.status?.update_fn, undefined);
    assert.equal(created.status?.resume_fn, undefined, 'nothing to resume: created while it ran');
    assert.match(lines(first, 'create_fn')[0] ?? '', /created kopf-example-1 with spec \{"duration":"1m"/);

    await client.patch(path, 'merge', { spec: { field: 'changed' } });
    const updated = await eventually('the update result', async () => {
      const current = await client.get<KubernetesObject>(path);
      return current.status?.update_fn ? current : undefined;
    });
    assert.deepEqual(updated.status?.update_fn, {
      diff: [['change', ['spec', 'field'], 'value', 'changed']],
    });
    assert.deepEqual(updated.status?.['field_fn/spec.field'], { change: ['value', 'changed'] });
    assert.match(
      lines(first, 'update_fn')[0] ?? '',
      /updated kopf-example-1: spec \{.*"field":"value".*\} -> \{.*"field":"changed".*\}/,
    );

    // A restart: the object is already handled, so only resume_fn is called.
    await first.stop();
    const second = await start(t, op, namespace);
    const resumed = await eventually('the resume result', async () => {
      const current = await client.get<KubernetesObject>(path);
      return current.status?.resume_fn ? current : undefined;
    });
    assert.deepEqual(resumed.status?.resume_fn, { message: 'resumed kopf-example-1' });
    for (const handler of ['create_fn', 'update_fn', 'field_fn/spec.field']) {
      assert.deepEqual(lines(second, handler), [], `${handler} is not called again after a restart`);
    }

    await client.request(path, { method: 'DELETE' });
    await eventually('kopf-example-1 to be gone', async () =>
      (await readOrGone(client, path)) === undefined ? true : undefined,
    );
    const deleting = lines(second, 'delete_fn');
    assert.equal(deleting.length, 1, second.logs.join('\n'));
    assert.match(
      deleting[0] ?? '',
      /deleting kopf-example-1 \(deletionTimestamp \d{4}-\S+, finalizers causeway\.dev\/finalizer\)/,
      'called while the finalizer still held the deleted object in the API',
    );
  });
});

describe('examples/06-field-handlers', async () => {
  const { default: op } = await import(example('06-field-handlers', 'operator.ts').href);

  it('calls field handlers only for the changes of their field that match their filters', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const path = kopfExample(namespace, 'kopf-example-1');
    const { service, calls } = recorded(op);
    await start(t, service, namespace);
    const FIELD = 'field_fn/spec.field';
    const read = () => client.get<KubernetesObject>(path);
    /** Makes a change, waits until it is handled, and returns the handlers called for it. */
    const change = async (
      spec: Record<string, unknown>,
      handled: (status: Record<string, unknown>) => boolean,
    ) => {
      const before = calls.length;
      await client.patch(path, 'merge', { spec });
      const object = await eventually(`the change ${JSON.stringify(spec)} handled`, async () => {
        const current = await read();
        return handled(current.status ?? {}) ? current : undefined;
      });
      return {
        object,
        called: calls.slice(before).map((call) => `${call.reason} ${Object.keys(call.outcomes)}`),
      };
    };

    await applyFile(example('06-field-handlers', 'object.yaml'), namespace);
    const created = await eventually('kopf-example-1 handled', async () => {
      const current = await read();
      return causewayStatus(current).essence ? current : undefined;
    });
    assert.deepEqual(created.status?.[FIELD], {
      change: [null, 'value'],
      diff: [['add', [], null, 'value']],
    });
    assert.deepEqual(
      calls.map((call) => `${call.reason} ${Object.keys(call.outcomes)}`),
      [`create ${FIELD}`],
    );

    const items = await change(
      { items: ['item3'] },
      (status) => JSON.stringify(status.update_fn) === JSON.stringify({ paths: ['spec.items'] }),
    );
    assert.deepEqual(items.called, ['update update_fn'], 'spec.field did not change: no field handler');

    const other = await change(
      { field: 'other' },
      (status) => (status[FIELD] as { change?: unknown[] }).change?.[1] === 'other',
    );
    assert.deepEqual(other.object.status?.[FIELD], {
      change: ['value', 'other'],
      diff: [['change', [], 'value', 'other']],
    });
    assert.deepEqual(other.object.status?.update_fn, { paths: ['spec.field'] });
    assert.deepEqual(other.called, [`update update_fn,${FIELD}`], 'neither reset nor removed');

    const reset = await change({ field: 'value' }, (status) => status.field_reset !== undefined);
    assert.deepEqual(reset.object.status?.field_reset, { from: 'other' });
    assert.deepEqual(reset.object.status?.[FIELD], {
      change: ['other', 'value'],
      diff: [['change', [], 'other', 'value']],
    });
    assert.deepEqual(reset.called, [`update update_fn,${FIELD},field_reset`]);

    const removed = await change({ field: null }, (status) => status.field_removed !== undefined);
    assert.deepEqual(removed.object.status?.field_removed, { was: 'value' });
    assert.deepEqual(removed.object.status?.[FIELD], {
      change: ['value', null],
      diff: [['remove', [], 'value', null]],
    });
    assert.deepEqual(removed.called, [`update update_fn,${FIELD},field_removed`]);
  });
});

describe('examples/10-builtins', async () => {
  const { default: op } = await import(example('10-builtins', 'operator.ts').href);
  const SUMMARY = 'example.causeway.dev/summary';
  const RECORD = 'causeway.dev/last-handled';

  it('handles labelled config maps and pods, keeps its record in annotations, leaves the others alone', async (t) => {
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const { service, calls } = recorded(op);
    const running = await start(t, service, namespace);
    // Pods are admitted once the namespace has its default service account.
    await eventually('the default service account', async () =>
      (await readOrGone(client, `/api/v1/namespaces/${namespace}/serviceaccounts/default`))
        ? true
        : undefined,
    );
    const applied = await applyFile(example('10-builtins', 'objects.yaml'), namespace);
    const unrelated = applied.find((object) => object.metadata.name === 'unrelated') as KubernetesObject;
    const configMaps = `/api/v1/namespaces/${namespace}/configmaps`;
    const pods = `/api/v1/namespaces/${namespace}/pods`;

    const settings = await eventually('the summary of settings', async () => {
      const current = await client.get<KubernetesObject>(`${configMaps}/settings`);
      return current.metadata.annotations?.[RECORD] ? current : undefined;
    });
    assert.equal(settings.metadata.annotations?.[SUMMARY], '2 keys: colour, size', 'the patch landed');
    const record = JSON.parse(settings.metadata.annotations?.[RECORD] ?? '{}');
    assert.deepEqual(record.data, { colour: 'blue', size: 'large' }, 'the handled-record, in an annotation');
    assert.equal(settings.status, undefined, 'a config map has no status: the result has nowhere to go');

    const pod = await eventually('the summary of the pod', async () => {
      const current = await client.get<KubernetesObject>(`${pods}/idle`);
      return current.metadata.annotations?.[RECORD] ? current : undefined;
    });
    assert.equal(pod.metadata.annotations?.[SUMMARY], 'main=registry.k8s.io/pause:3.10');
    assert.equal(
      (pod.status as { phase?: string } | undefined)?.phase,
      'Pending',
      'no node will ever run it',
    );
    assert.equal(
      (pod.status as Record<string, unknown>).causeway,
      undefined,
      'no state in a built-in status',
    );

    // unrelated came first in the same watch as settings, so the gateway has seen it by now.
    const untouched = await client.get<KubernetesObject>(`${configMaps}/unrelated`);
    assert.equal(untouched.metadata.resourceVersion, unrelated.metadata.resourceVersion, 'no write at all');
    assert.deepEqual(gatewayState(untouched), []);
    assert.deepEqual(
      calls.map((call) => `${call.reason} ${call.name} ${Object.keys(call.outcomes)}`).sort(),
      ['create idle pod_fn', 'create settings configmap_fn'],
    );
    assert.ok(!running.logs.some((line) => line.includes(`[${namespace}/unrelated]`)), 'not a word about it');
    assert.equal(
      running.logs.filter(
        (line) =>
          line.includes("does not keep the handler's result: dropped") &&
          line.includes(' handler=configmap_fn'),
      ).length,
      1,
      'the dropped result is said once',
    );
  });
});

describe('examples/11-filtering-handlers', async () => {
  const { default: op } = await import(example('11-filtering-handlers', 'operator.ts').href);
  const objects = objectsOf('11-filtering-handlers', 'objects.yaml');
  const named = (name: string) => objects.find((object) => object.metadata.name === name) as KubernetesObject;

  it('runs the when callback in-process, before the handler', async () => {
    const yes = await callHandlers(op, {
      reason: 'create',
      body: named('kopf-example-1'),
      handlers: ['with_items'],
    });
    assert.deepEqual(yes.outcomes.with_items, { status: 'success', result: { items: ['item1', 'item2'] } });
    const no = await callHandlers(op, {
      reason: 'create',
      body: named('kopf-example-4'),
      handlers: ['with_items'],
    });
    assert.deepEqual(no.outcomes.with_items, { status: 'skipped' });
  });

  it('calls only the handlers whose filters match; objects that match none get no call and no write', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const { service, calls } = recorded(op);
    await start(t, service, namespace);
    const applied = await applyFile(example('11-filtering-handlers', 'objects.yaml'), namespace);
    const path = (name: string) => kopfExample(namespace, name);
    const handled = (name: string) =>
      eventually(`${name} handled`, async () => {
        const current = await client.get<KubernetesObject>(path(name));
        return causewayStatus(current).essence ? current : undefined;
      });
    const results = (object: KubernetesObject) => {
      const { causeway: _state, ...rest } = object.status ?? {};
      return rest;
    };
    const callsFor = (name: string) =>
      calls
        .filter((call) => call.name === name)
        .map((call) => `${call.reason} ${JSON.stringify(call.outcomes)}`);

    assert.deepEqual(results(await handled('kopf-example-1')), {
      label_exact: { matched: 'somelabel=somevalue' },
      label_present: { matched: 'somelabel=somevalue' },
      label_absent: { matched: 'no label "ignored"' },
      annotation_exact: { matched: 'someannotation=somevalue' },
      with_items: { items: ['item1', 'item2'] },
    });
    assert.deepEqual(results(await handled('kopf-example-2')), {
      label_present: { matched: 'somelabel=othervalue' },
    });
    assert.deepEqual(callsFor('kopf-example-2'), ['create {"label_present":"success"}']);

    // kopf-example-4 only concerns with_items, whose callback says no: a call, answered "skipped".
    await eventually('the call about kopf-example-4', async () =>
      callsFor('kopf-example-4').length > 0 ? true : undefined,
    );
    assert.deepEqual(callsFor('kopf-example-4'), ['create {"with_items":"skipped"}']);

    // kopf-example-3 came before kopf-example-4 in the same watch, so the gateway has seen it by now.
    const third = await client.get<KubernetesObject>(path('kopf-example-3'));
    const appliedThird = applied.find((object) => object.metadata.name === 'kopf-example-3');
    assert.equal(third.metadata.resourceVersion, appliedThird?.metadata.resourceVersion, 'no write at all');
    assert.deepEqual(gatewayState(third), []);
    assert.equal(third.status, undefined);
    assert.deepEqual(callsFor('kopf-example-3'), [], 'no call');

    // No handler applied to kopf-example-4 either, so, as in Kopf, nothing may be recorded on it: once
    // it has items, with_items applies, and it is handled as created.
    await client.patch(path('kopf-example-4'), 'merge', { spec: { items: ['item1'] } });
    const fourth = await eventually('with_items on kopf-example-4 once it has items', async () => {
      const current = await client.get<KubernetesObject>(path('kopf-example-4'));
      if (current.status?.with_items) return current;
      assert.deepEqual(
        gatewayState(current),
        [],
        `kopf-example-4 was recorded as handled though its only handler did not apply: ${JSON.stringify(current.status ?? current.metadata.annotations)}`,
      );
      return undefined;
    });
    assert.deepEqual(fourth.status?.with_items, { items: ['item1'] });
    assert.deepEqual(callsFor('kopf-example-4'), [
      'create {"with_items":"skipped"}',
      'create {"with_items":"success"}',
    ]);
  });
});

describe('examples/13-hooks', async () => {
  const { default: op } = await import(example('13-hooks', 'operator.ts').href);
  const liveness = (running: RunningOperator) => running.gateway.liveness as string;
  const probed = async (running: RunningOperator) =>
    (await (await fetch(liveness(running))).json()) as {
      tasks_count: number;
      monitored_objects: Record<string, string[]>;
    };

  it('answers a startup retry in-process: temporary until its fourth attempt', async () => {
    const handlers = ['startup_fn_retried'];
    const first = await callActivities(op, { activity: 'startup', handlers });
    assert.deepEqual(first.outcomes, {
      startup_fn_retried: { status: 'temporary', message: 'going to succeed in 3s', delay: 1 },
    });
    const fourth = await callActivities(op, { activity: 'startup', handlers, retry: 3 });
    assert.deepEqual(fourth.outcomes, { startup_fn_retried: { status: 'success' } });
  });

  it('starts before any pod, reports its pod-tasks at the liveness endpoint, and stops them at cleanup', async (t) => {
    const namespace = await testNamespace(t);
    const running = await runOperator(op, {
      namespaces: [namespace],
      kubeconfig: (await testCluster()).kubeconfigPath,
      liveness: 'http://127.0.0.1:0/healthz',
      settings: { activities: { probeCacheMs: 0 } },
    });
    let stopped = false;
    t.after(() => (stopped ? undefined : running.stop()));
    const retries = running.logs.filter((line) =>
      line.includes('startup_fn_retried" of function service "hooks" failed, retrying in 1s'),
    );
    assert.equal(retries.length, 3);
    assert.ok(
      running.logs.some((line) =>
        line.includes('startup handler "startup_fn_simple" of function service "hooks" succeeded'),
      ),
    );
    assert.deepEqual(await probed(running), { tasks_count: 0, monitored_objects: {} });

    await createPod(namespace, 'idle');
    const health = await eventually('the pod monitored', async () => {
      const answer = await probed(running);
      return answer.monitored_objects[namespace]?.includes('idle') ? answer : undefined;
    });
    assert.deepEqual(health, { tasks_count: 1, monitored_objects: { [namespace]: ['idle'] } });

    await running.stop();
    stopped = true;
    const cleanup = running.logs.findIndex(
      (line) =>
        line.includes(' all pod-tasks are requested to stop... ') && line.includes(' handler=cleanup_fn '),
    );
    assert.ok(cleanup > 0, running.logs.join('\n'));
    assert.match(
      running.logs[cleanup + 1] ?? '',
      /cleanup handler "cleanup_fn" of function service "hooks" succeeded/,
    );
  });

  it('logs the gateway in with what its login handler gives, and serves the pods with it', async (t) => {
    const namespace = await testNamespace(t);
    const running = await runOperator(op, { namespaces: [namespace], loginFrom: 'hooks' });
    t.after(() => running.stop());
    const { server } = await testCluster();
    assert.ok(running.logs.some((line) => line.includes(`logged in to ${server} through "hooks", until `)));
    await createPod(namespace, 'watched');
    await eventually('the pod-task', async () =>
      running.logs.some((line) => line.includes(`a task for ${namespace}/watched is started`))
        ? true
        : undefined,
    );
  });
});

describe('examples/16-indexing', async () => {
  const { default: op } = await import(example('16-indexing', 'operator.ts').href);

  it('indexes one pod in-process, by the functions of the service', async () => {
    const [pod] = objectsOf('01-minimal', 'object.yaml');
    const body = {
      ...(pod as KubernetesObject),
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'default', uid: 'uid-web', labels: { app: 'web', tier: 'front' } },
      status: { phase: 'Running' },
    };
    const response = await callHandlers(op, { reason: 'index', body });
    assert.deepEqual(response.outcomes, {
      is_running: { status: 'success', result: [['default/web', true]] },
      by_label: {
        status: 'success',
        result: [
          ['app=web', 'web'],
          ['tier=front', 'web'],
        ],
      },
    });
  });

  it('reports the pods at the liveness endpoint and the running ones in each KopfExample', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    await createPod(namespace, 'web', { labels: { app: 'web' } }, { nodeName: 'node-1' });
    await createPod(namespace, 'db', { labels: { app: 'db' } }, { nodeName: 'node-1' });
    await createPod(namespace, 'queued', { labels: { app: 'web' } });
    // No kubelet runs the pods here: the test says one runs, as a kubelet would.
    await client.patch(`/api/v1/namespaces/${namespace}/pods/web/status`, 'merge', {
      status: { phase: 'Running' },
    });
    await applyFile(example('01-minimal', 'object.yaml'), namespace);
    const running = await runOperator(op, {
      namespaces: [namespace],
      kubeconfig: (await testCluster()).kubeconfigPath,
      liveness: 'http://127.0.0.1:0/healthz',
      settings: { activities: { probeCacheMs: 0 } },
    });
    t.after(() => running.stop());
    const probed = await (await fetch(running.gateway.liveness as string)).json();
    assert.deepEqual(probed, {
      pod_count: 3,
      pod_names: ['db', 'queued', 'web'],
      pods_per_node: { 'node-1': 2 },
    });
    const listed = await eventually('status.running-pods', async () => {
      const object = await client.get<KubernetesObject>(kopfExample(namespace, 'kopf-example-1'));
      return object.status?.['running-pods'];
    });
    assert.deepEqual(listed, [`${namespace}::web`]);
    assert.ok(
      running.logs.some((line) =>
        line.includes(`pods by label: {"app=db":["db"],"app=web":["queued","web"]}`),
      ),
      running.logs.join('\n'),
    );
  });
});

describe('examples/17-admission', async () => {
  const { default: op } = await import(example('17-admission', 'operator.ts').href);

  it('refuses the wrong objects with their messages, warns, and injects the field into the labelled one', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    await start(t, op, namespace);
    const refuse = JSON.stringify({
      apiVersion: 'kopf.dev/v1',
      kind: 'KopfExample',
      metadata: { name: 'probe' },
      spec: { field: 'not-allowed' },
    });
    // The apiserver takes up new webhook configurations shortly after they are written.
    await eventually('the webhooks in effect', async () => {
      const dry = await kubectl(['create', '--dry-run=server', '-n', namespace, '-f', '-'], refuse);
      return dry.code === 0 ? undefined : true;
    });
    const applied = await kubectl([
      'apply',
      '-n',
      namespace,
      '-f',
      example('17-admission', 'objects.yaml').pathname,
    ]);

    assert.notEqual(applied.code, 0, 'two of the objects are refused');
    assert.match(applied.stdout, /kopfexample.kopf.dev\/kopf-example-1 created/);
    assert.match(applied.stderr, /denied the request: Meh! I don't like it\. Change the field\./);
    assert.match(applied.stderr, /denied the request: I'm too lazy anyway\. Go away!/);
    assert.match(applied.stderr, /Warning: Accessing as user: /);
    const client = await kubeClient();
    const first = await client.get<KubernetesObject>(kopfExample(namespace, 'kopf-example-1'));
    assert.equal(first.spec?.injected, 123);
    for (const refused of ['kopf-example-2', 'kopf-example-3']) {
      assert.equal(
        await readOrGone(client, kopfExample(namespace, refused)),
        undefined,
        `${refused} not stored`,
      );
    }

    // validate1 lets a server-side dry run through.
    const dryRun = await kubectl(
      ['create', '--dry-run=server', '-n', namespace, '-f', '-'],
      JSON.stringify({
        apiVersion: 'kopf.dev/v1',
        kind: 'KopfExample',
        metadata: { name: 'dry' },
        spec: { field: 'wrong' },
      }),
    );
    assert.equal(dryRun.code, 0, dryRun.stderr);
  });
});

describe('examples/14-daemons', async () => {
  const { default: op } = await import(example('14-daemons', 'operator.ts').href);

  it('fails thrice, pings across rounds, finishes by itself or when stopped, and holds a deletion until stopped', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const running = await runOperator(op, {
      namespaces: [namespace],
      kubeconfig: (await testCluster()).kubeconfigPath,
      // Short rounds: a round's log lines reach the gateway's log when it ends.
      settings: { calls: { daemonRoundMs: 2000 } },
    });
    t.after(() => running.stop());
    /** The gateway's lines about `name` that include `text`. */
    const said = (name: string, text: string) =>
      running.logs.filter((line) => line.includes(`[${namespace}/${name}] `) && line.includes(text));
    /** A daemon's own lines about an object, forwarded by the gateway. */
    const saidBy = (name: string, daemon: string, text: string) =>
      said(name, `] ${text}`).filter((line) => new RegExp(` handler=${daemon}(\\s|$)`).test(line));
    const lineBy = (name: string, daemon: string, text: string) =>
      eventually(`"${text}" from ${daemon} about ${name}`, async () => saidBy(name, daemon, text)[0], 30_000);
    const messageOf = (path: string, message: string) =>
      eventually(
        `status.message "${message}" on ${path}`,
        async () => {
          const current = await client.get<KubernetesObject>(path);
          return current.status?.message === message ? current : undefined;
        },
        30_000,
      );
    const failures = (name: string, daemon: string) =>
      said(name, 'daemon failed temporarily ').filter(
        (line) =>
          line.includes(` handler=${daemon} `) && line.includes('delaySeconds=1 err="Simulated failure."'),
      ).length;
    const first = kopfExample(namespace, 'kopf-example-1');
    const second = kopfExample(namespace, 'kopf-example-2');

    await applyFile(example('01-minimal', 'object.yaml'), namespace);
    await client.request(kopfExample(namespace), {
      method: 'POST',
      body: {
        apiVersion: 'kopf.dev/v1',
        kind: 'KopfExample',
        metadata: { name: 'kopf-example-2', annotations: { someannotation: 'somevalue' } },
        spec: { field: 'second' },
      },
    });

    const failing = await messageOf(first, 'Failed 3 times.');
    assert.deepEqual(failing.metadata.finalizers, ['causeway.dev/finalizer'], 'held for its daemons');

    // kopf-example-2 loses the annotation background_async is for: it is told so, and returns.
    await lineBy('kopf-example-2', 'background_async', '=> ping from an async daemon: field="second"');
    await client.patch(second, 'merge', { metadata: { annotations: { someannotation: null } } });
    const mismatch = await lineBy('kopf-example-2', 'background_async', 'stopped: filters-mismatch');
    // background_sync pings for 5 s, over several rounds of 2 s, and returns for good.
    await messageOf(first, 'Accompanying is finished.');
    const returned = await lineBy(
      'kopf-example-1',
      'background_sync',
      'daemon returned; not called again until the object changes ',
    );
    const syncPings = saidBy('kopf-example-1', 'background_sync', '=> ping from a sync daemon:');
    assert.ok(syncPings.length >= 4, syncPings.join('\n'));
    assert.ok(
      syncPings.every((line) => line.includes('field="value"')),
      'it sees the object as it is',
    );
    assert.ok(
      running.logs.indexOf(syncPings.at(-1) as string) < running.logs.indexOf(returned),
      'no ping after it returned',
    );

    // background_async pings on, round after round.
    const asyncPings = saidBy('kopf-example-1', 'background_async', '=> ping from an async daemon:').length;
    await eventually('more pings from background_async', async () =>
      saidBy('kopf-example-1', 'background_async', '=> ping from an async daemon: field="value"').length >=
      asyncPings + 2
        ? true
        : undefined,
    );
    for (const daemon of ['background_sync', 'background_async']) {
      assert.equal(
        failures('kopf-example-1', daemon),
        3,
        `${daemon} failed thrice, and never in later rounds`,
      );
    }
    const afterMismatch = running.logs.slice(running.logs.indexOf(mismatch) + 1);
    assert.deepEqual(
      afterMismatch.filter(
        (line) =>
          line.includes(`[${namespace}/kopf-example-2] `) &&
          line.includes(' handler=background_async ') &&
          // What it said, or a failure of its: a call; the gateway's own line of its stop is none.
          (line.includes(' origin=function') || line.includes('daemon failed')),
      ),
      [],
      'no longer annotated: not called again',
    );

    // The deletion waits for background_async, which returns at once (or it would be cut off after
    // 0.5 s, its lines lost); background_sync is over already.
    await client.request(first, { method: 'DELETE' });
    await eventually('kopf-example-1 gone', async () =>
      (await readOrGone(client, first)) === undefined ? true : undefined,
    );
    const stopped = saidBy('kopf-example-1', 'background_async', 'stopped: resource-deleted');
    assert.equal(stopped.length, 1, 'it was told why, and returned before its object went');
    assert.deepEqual(
      saidBy('kopf-example-1', 'background_sync', 'stopped'),
      [],
      'not called again to be stopped',
    );
  });
});

describe('examples/15-timers', async () => {
  const { default: op } = await import(example('15-timers', 'operator.ts').href);
  const SYNC = 'every_few_seconds_sync';
  const ASYNC = 'every_few_seconds_async';
  /** Timers' calls wait on the gateway's clock, which this one is: only the rounding of a ms apart. */
  const SLACK_MS = 50;

  it('pings once the object is idle, then every interval; writes its result once per value; holds no deletion', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const running = await start(t, op, namespace);
    const path = kopfExample(namespace, 'kopf-example-1');
    const read = () => client.get<KubernetesObject>(path);
    /** The pings `handler` logged about `name`: when the call ended, and the spec.field it saw. */
    const pings = (name: string, handler: string) =>
      running.logs.flatMap((line) => {
        const match = new RegExp(
          `^(\\S+) .*\\[${namespace}/${name}\\] ping from an? \\w+ timer: field=(\\S+) .* handler=${handler} `,
        ).exec(line);
        return match ? [{ at: Date.parse(match[1] as string), field: JSON.parse(match[2] as string) }] : [];
      });
    const pingsOf = (name: string, handler: string, count: number, field: string) =>
      eventually(
        `${count} pings of ${handler} about ${name} with field ${field}`,
        async () => {
          const found = pings(name, handler).filter((ping) => ping.field === field);
          return found.length >= count ? found : undefined;
        },
        30_000,
      );
    const gaps = (found: { at: number }[]) => found.slice(1).map((ping, i) => ping.at - (found[i]?.at ?? 0));
    const resultOf = (field: string) =>
      eventually(
        `status.${ASYNC} for field ${field}`,
        async () => {
          const current = await read();
          return (current.status?.[ASYNC] as { field?: unknown } | undefined)?.field === field
            ? current
            : undefined;
        },
        30_000,
      );

    const created = Date.now();
    await applyFile(example('01-minimal', 'object.yaml'), namespace);
    const asyncPings = await pingsOf('kopf-example-1', ASYNC, 2, 'value');
    const syncPings = pings('kopf-example-1', SYNC);
    assert.ok(syncPings.length >= 2, 'the sync timer, more often');
    assert.ok((syncPings[0]?.at ?? 0) - created >= 2000 - SLACK_MS, 'idle for 2 s first');
    assert.ok((asyncPings[0]?.at ?? 0) - created >= 4000 - SLACK_MS, 'idle for 4 s first');
    for (const gap of gaps(syncPings)) assert.ok(gap >= 1000 - SLACK_MS, `sync pings ${gap} ms apart`);
    for (const gap of gaps(asyncPings)) assert.ok(gap >= 2000 - SLACK_MS, `async pings ${gap} ms apart`);

    const withResult = await resultOf('value');
    assert.deepEqual(withResult.status?.[ASYNC], { field: 'value' });
    assert.equal(withResult.metadata.finalizers, undefined, 'timers hold no finalizer');
    // The timers go on; the same result is not written again, nor anything else.
    const syncSoFar = pings('kopf-example-1', SYNC).length;
    await pingsOf('kopf-example-1', SYNC, syncSoFar + 3, 'value');
    assert.equal((await read()).metadata.resourceVersion, withResult.metadata.resourceVersion, 'no write');

    // A change: both wait until the object has been idle again, then see it.
    const changed = Date.now();
    await client.patch(path, 'merge', { spec: { field: 'other' } });
    const [firstSync] = await pingsOf('kopf-example-1', SYNC, 1, 'other');
    const [firstAsync] = await pingsOf('kopf-example-1', ASYNC, 1, 'other');
    assert.ok((firstSync?.at ?? 0) - changed >= 2000 - SLACK_MS, 'idle for 2 s after the change');
    assert.ok((firstAsync?.at ?? 0) - changed >= 4000 - SLACK_MS, 'idle for 4 s after the change');
    assert.deepEqual(
      [...pings('kopf-example-1', SYNC), ...pings('kopf-example-1', ASYNC)].filter(
        (ping) => ping.field === 'value' && ping.at > changed + 1000,
      ),
      [],
      'no call while the object is not idle',
    );
    await resultOf('other');

    // Deleted: gone at once (no finalizer), and its timers stop; another object's show they would have run.
    await client.request(path, { method: 'DELETE' });
    await eventually('kopf-example-1 gone', async () =>
      (await readOrGone(client, path)) === undefined ? true : undefined,
    );
    const gone = Date.now();
    await client.request(kopfExample(namespace), {
      method: 'POST',
      body: {
        apiVersion: 'kopf.dev/v1',
        kind: 'KopfExample',
        metadata: { name: 'kopf-example-2' },
        spec: { field: 'second' },
      },
    });
    await pingsOf('kopf-example-2', SYNC, 2, 'second');
    assert.deepEqual(
      [...pings('kopf-example-1', SYNC), ...pings('kopf-example-1', ASYNC)].filter((ping) => ping.at > gone),
      [],
      'no call about a deleted object',
    );
  });
});
