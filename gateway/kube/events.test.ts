import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesEvent, KubernetesObject, ObjectReference } from '../../protocol/index.ts';
import { createLogger } from '../logging.ts';
import type { KubeClient, RequestInit } from './client.ts';
import { ApiError } from './errors.ts';
import { aboutApplied, eventFor, MAX_MESSAGE_LENGTH, postEvents, truncate } from './events.ts';
import { writtenAs } from './written-as.ts';

const NOW = new Date('2026-01-02T03:04:05.000Z');

/** A KopfExample in team-a, or cluster-scoped with `namespace: null`. */
function object(overrides: Partial<KubernetesObject> = {}, namespace: string | null = 'team-a') {
  return {
    apiVersion: 'kopf.dev/v1',
    kind: 'KopfExample',
    metadata: {
      name: 'kopf-example-1',
      uid: '6b2d0c4e-0000-4000-8000-000000000001',
      resourceVersion: '42',
      ...(namespace ? { namespace } : {}),
    },
    ...overrides,
  } as KubernetesObject;
}

/** The event as it goes over the wire (keys whose value is undefined are not sent). */
function wire(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value));
}

/** A client that records the requests it is asked to make, and answers them with `answer`. */
function recordingClient(answer: (path: string) => Promise<unknown> = async () => ({})) {
  const requests: Array<{ path: string; init: RequestInit }> = [];
  const client = {
    async request(path: string, init: RequestInit = {}) {
      requests.push({ path, init });
      return answer(path);
    },
  } as unknown as KubeClient;
  return { client, requests };
}

function memoryLogger() {
  const lines: string[] = [];
  return { lines, logger: createLogger({ level: 'debug', sink: { write: (line) => lines.push(line) } }) };
}

const normal: KubernetesEvent = { type: 'Normal', reason: 'Created', message: 'hello' };

describe('Kubernetes events', () => {
  it('cuts messages to 1024 characters, marking the cut', () => {
    assert.equal(MAX_MESSAGE_LENGTH, 1024);
    const exact = 'x'.repeat(1024);
    assert.equal(truncate(exact), exact, 'a message of 1024 characters is kept whole');
    assert.equal(truncate('short'), 'short');
    for (const length of [1025, 5000]) {
      const message = `${'a'.repeat(1023)}${'b'.repeat(length - 1023)}`;
      const cut = truncate(message);
      assert.equal(cut.length, 1024, `a message of ${length}`);
      assert.equal(cut, `${'a'.repeat(1023)}…`);
    }
    const body = eventFor(object(), { type: 'Warning', reason: 'Long', message: 'y'.repeat(3000) }, NOW);
    assert.equal((body?.message as string | undefined)?.length, 1024);
    assert.equal(
      (eventFor(object(), { ...normal, reason: 'R'.repeat(300) }, NOW)?.reason as string | undefined)?.length,
      128,
      'reasons are cut to the 128 the API takes',
    );
  });

  it('describes the object it is about in involvedObject, in the object’s namespace', () => {
    assert.deepEqual(wire(eventFor(object(), normal, NOW)), {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { generateName: 'kopf-example-1.', namespace: 'team-a' },
      involvedObject: {
        apiVersion: 'kopf.dev/v1',
        kind: 'KopfExample',
        name: 'kopf-example-1',
        namespace: 'team-a',
        uid: '6b2d0c4e-0000-4000-8000-000000000001',
        resourceVersion: '42',
      },
      type: 'Normal',
      reason: 'Created',
      message: 'hello',
      source: { component: 'causeway' },
      reportingComponent: 'causeway',
      reportingInstance: 'causeway',
      firstTimestamp: '2026-01-02T03:04:05.000Z',
      lastTimestamp: '2026-01-02T03:04:05.000Z',
      count: 1,
    });
  });

  it('puts events about cluster-scoped objects in default, naming no namespace for the object', () => {
    const body = wire(eventFor(object({}, null), normal, NOW)) as {
      metadata: { namespace: string };
      involvedObject: Record<string, unknown>;
    };
    assert.equal(body.metadata.namespace, 'default');
    assert.deepEqual(body.involvedObject, {
      apiVersion: 'kopf.dev/v1',
      kind: 'KopfExample',
      name: 'kopf-example-1',
      uid: '6b2d0c4e-0000-4000-8000-000000000001',
      resourceVersion: '42',
    });
  });

  it('makes no event about v1 or events.k8s.io/v1 Events: that would feed itself', () => {
    assert.equal(eventFor(object({ apiVersion: 'v1', kind: 'Event' }), normal, NOW), undefined);
    assert.equal(eventFor(object({ apiVersion: 'events.k8s.io/v1', kind: 'Event' }), normal, NOW), undefined);
    assert.notEqual(
      eventFor(object({ apiVersion: 'example.com/v1', kind: 'Event' }), normal, NOW),
      undefined,
      'a custom resource that happens to be called Event is an object like any other',
    );
  });

  it('posts each event to the events of the object’s namespace, and nothing about Events', async () => {
    const { client, requests } = recordingClient();
    const { logger, lines } = memoryLogger();
    const warning: KubernetesEvent = { type: 'Warning', reason: 'Failed', message: 'z'.repeat(2000) };
    await postEvents(client, object(), [normal, warning], logger);
    assert.deepEqual(
      requests.map(({ path, init }) => [path, init.method, (init.body as { reason: string }).reason]),
      [
        ['/api/v1/namespaces/team-a/events', 'POST', 'Created'],
        ['/api/v1/namespaces/team-a/events', 'POST', 'Failed'],
      ],
    );
    assert.equal((requests[1]?.init.body as { message: string } | undefined)?.message.length, 1024);

    requests.length = 0;
    await postEvents(client, object({ apiVersion: 'v1', kind: 'Event' }), [normal, warning], logger);
    await postEvents(client, object({ apiVersion: 'events.k8s.io/v1', kind: 'Event' }), [normal], logger);
    assert.deepEqual(requests, [], 'nothing posted about Event objects');
    assert.deepEqual(lines, []);
  });

  it('logs a failure to post, and goes on with the others', async () => {
    const { client, requests } = recordingClient(async () => {
      if (requests.length === 1)
        throw new ApiError('POST', '/api/v1/namespaces/team-a/events', 403, 'forbidden');
      return {};
    });
    const { logger, lines } = memoryLogger();
    await postEvents(client, object(), [normal, { ...normal, reason: 'Second' }], logger);
    assert.equal(requests.length, 2);
    assert.equal(lines.length, 1);
    assert.match(lines[0] as string, /WARNING .*could not post an event reason=Created err="POST .* 403 /);
  });
});

describe('events a service asked for, under --impersonate', () => {
  it('posts each as the account it is marked to be written as, the unmarked as the gateway', async () => {
    const posted: Array<{ by: string; reason: unknown }> = [];
    const clientAs = (by: string): KubeClient =>
      ({
        async request(_path: string, init: RequestInit = {}) {
          posted.push({ by, reason: (init.body as { reason?: unknown }).reason });
          return {};
        },
        impersonating: ({ namespace, name }: { namespace: string; name: string }) =>
          clientAs(`${namespace}/${name}`),
      }) as unknown as KubeClient;
    const { logger } = memoryLogger();
    const asked = writtenAs({ ...normal, reason: 'Asked' }, { namespace: 'team-a', name: 'billing' });
    await postEvents(clientAs('gateway'), object(), [asked, { ...normal, reason: 'HandlerFailed' }], logger);
    assert.deepEqual(posted, [
      { by: 'team-a/billing', reason: 'Asked' },
      { by: 'gateway', reason: 'HandlerFailed' },
    ]);
  });
});

describe('events about other objects', () => {
  const child = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'kex-child', namespace: 'team-b', uid: 'uid-child', resourceVersion: '7' },
  } as KubernetesObject;

  it('name the object of `about` in involvedObject, and go to its namespace', () => {
    const about = { apiVersion: 'v1', kind: 'ConfigMap', name: 'kex-child', namespace: 'team-b', uid: 'u' };
    const body = wire(eventFor(object(), { ...normal, about }, NOW)) as Record<string, unknown>;
    assert.deepEqual(body.metadata, { generateName: 'kex-child.', namespace: 'team-b' });
    assert.deepEqual(body.involvedObject, about, 'what the reference names, no more');
    assert.equal(body.reason, 'Created');
  });

  it('go to default for a cluster-scoped object, and are never about Events', () => {
    const about = { apiVersion: 'v1', kind: 'Namespace', name: 'team-b', uid: 'u' };
    const body = wire(eventFor(object(), { ...normal, about }, NOW)) as Record<string, unknown>;
    assert.deepEqual(body.metadata, { generateName: 'team-b.', namespace: 'default' });
    assert.deepEqual(body.involvedObject, about);
    for (const apiVersion of ['v1', 'events.k8s.io/v1']) {
      const event = { ...normal, about: { apiVersion, kind: 'Event', name: 'e', namespace: 'team-a' } };
      assert.equal(eventFor(object(), event, NOW), undefined, apiVersion);
    }
    const custom = { ...normal, about: { apiVersion: 'example.com/v1', kind: 'Event', name: 'e' } };
    assert.notEqual(eventFor(object(), custom, NOW), undefined);
  });

  it('take the uid, and the namespace when they name none, of the object of that name applied', () => {
    const named = (about: ObjectReference): KubernetesEvent => ({ ...normal, about });
    const reference = { apiVersion: 'v1', kind: 'ConfigMap', name: 'kex-child' };
    const otherKind = { ...child, kind: 'Secret', metadata: { ...child.metadata, uid: 'uid-secret' } };
    const events = [
      normal,
      named(reference),
      named({ ...reference, namespace: 'team-b' }),
      named({ ...reference, namespace: 'team-c' }),
      named({ ...reference, uid: 'given' }),
      named({ ...reference, name: 'other' }),
      named({ ...reference, apiVersion: 'v2' }),
    ];
    assert.deepEqual(
      aboutApplied(events, [otherKind, child]).map((event) => event.about),
      [
        undefined,
        { ...reference, namespace: 'team-b', uid: 'uid-child' },
        { ...reference, namespace: 'team-b', uid: 'uid-child' },
        { ...reference, namespace: 'team-c' },
        { ...reference, uid: 'given' },
        { ...reference, name: 'other' },
        { ...reference, apiVersion: 'v2' },
      ],
    );
    const clusterScoped = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns', uid: 'uid-ns' } };
    assert.deepEqual(
      aboutApplied([named({ apiVersion: 'v1', kind: 'Namespace', name: 'ns' })], [clusterScoped as never])[0]
        ?.about,
      { apiVersion: 'v1', kind: 'Namespace', name: 'ns', uid: 'uid-ns' },
    );
  });

  it('are posted to the namespace of the object they are about, completed from what was applied', async () => {
    const { client, requests } = recordingClient();
    const { logger } = memoryLogger();
    const about = { apiVersion: 'v1', kind: 'ConfigMap', name: 'kex-child' };
    await postEvents(client, object(), [normal, { ...normal, reason: 'Child', about }], logger, [child]);
    assert.deepEqual(
      requests.map(({ path, init }) => [
        path,
        (init.body as { involvedObject: { uid: string } }).involvedObject.uid,
      ]),
      [
        ['/api/v1/namespaces/team-a/events', '6b2d0c4e-0000-4000-8000-000000000001'],
        ['/api/v1/namespaces/team-b/events', 'uid-child'],
      ],
    );
  });
});

describe('cutting messages', () => {
  it('never splits a character outside the basic plane', () => {
    const cut = truncate(`${'a'.repeat(1022)}😀😀😀`);
    assert.equal([...cut].length, 1024);
    assert.ok(cut.endsWith('a😀…'), cut.slice(-5));
  });
});
