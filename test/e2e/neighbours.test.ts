/**
 * One service never harms another (issue 39), on the real apiserver: a well-behaved service and
 * hostile neighbours on the same resource, one gateway, every neighbour handling every object the
 * well-behaved one handles, each trying one attack at once. The well-behaved service's objects are
 * handled, its results, progress and webhook intact; each attack is refused with its reason in the
 * log (and, for a service refused whole, in the metrics and the readiness body); the flood is held to
 * its service's budget. The gateway's own memory under a flood, measured in a process of its own, is
 * test/e2e/hostile/budgets.test.ts; each boundary alone is a test of test/e2e/hostile/.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { AdmissionError, type Operator, operator, TemporaryError } from '../../functions/index.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import { ApiError } from '../../gateway/kube/errors.ts';
import { type KubernetesObject, PROTOCOL, type ServiceScope } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import { type HostileCall, hostileService } from '../support/hostile-service.ts';
import { sample, scrape } from '../support/metrics.ts';
import {
  admissionRefusal,
  applyFile,
  createKopfExample,
  eventually,
  kubeClient,
  memoryLogger,
  type NamedHandler,
  progressOf,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const KOPFEXAMPLES = 'kopfexamples.kopf.dev';
const MiB = 1024 * 1024;
const OBJECTS = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight'];

/** The well-behaved service: a create handler with a result, and a webhook that refuses one value. */
function good(): Operator {
  const op = operator({ name: 'good', secret: TEST_SECRET });
  op.on.create('kopfexamples', function create_fn({ name }) {
    return `handled ${name}`;
  });
  op.on.validate('kopfexamples', function check_field({ spec }) {
    if (spec.field === 'forbidden') throw new AdmissionError('good says spec.field must not be "forbidden"');
  });
  return op;
}

/**
 * A neighbour with one create handler `id`, whose answers (or manifest) its attack rewrites. It takes
 * no batches: each call is sent on its own, the one invocation whose answer the attack rewrites (a
 * batch's answer would reach the gateway as the honest service gave it).
 */
function neighbour(
  name: string,
  id: string,
  attack: Parameters<typeof hostileService>[1],
  handler: () => unknown = () => 'done',
): NamedHandler {
  const op = operator({ name, secret: TEST_SECRET });
  op.on.create('kopfexamples', { id }, handler);
  return hostileService(op, {
    ...attack,
    manifest: (honest) => ({ ...((attack.manifest?.(honest) ?? honest) as object), batches: false }),
  });
}

/** The answer with the outcome of handler `id` changed by `change`. */
function rewritten(id: string, change: Record<string, unknown>) {
  return ({ answer }: HostileCall) => {
    const outcomes = answer.outcomes as Record<string, Record<string, unknown>> | undefined;
    if (!outcomes?.[id]) return undefined;
    return { ...answer, outcomes: { [id]: { ...outcomes[id], ...change } } };
  };
}

/** Replies of the flood that must be under way together: five of 15 MiB are more than its 64 MiB budget. */
const FLOOD_TOGETHER = 5;

/**
 * The flood's replies: 15 MiB of JSON each, the length declared, sent 1 MiB every 20 ms once
 * FLOOD_TOGETHER replies (one per object: neighbours take no batches) have begun, their headers sent,
 * so that the gateway has asked its budget for each declared length; refused once read (they hold no
 * outcomes).
 */
function flood() {
  let begun = 0;
  let together: () => void = () => {};
  const allBegun = new Promise<void>((resolve) => {
    together = resolve;
  });
  return (): Response => {
    begun++;
    if (begun >= FLOOD_TOGETHER) together();
    const encoder = new TextEncoder();
    const head = encoder.encode(`{"protocol":"${PROTOCOL}","padding":"`);
    const tail = encoder.encode('"}');
    const piece = new Uint8Array(MiB).fill(0x78);
    let sent = 0;
    return new Response(
      new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (sent === 0) {
            await allBegun;
            controller.enqueue(head);
          }
          if (sent === 15) {
            controller.enqueue(tail);
            controller.close();
            return;
          }
          await new Promise((paced) => setTimeout(paced, 20));
          sent++;
          controller.enqueue(piece);
        },
      }),
      {
        headers: {
          'content-type': 'application/json',
          'content-length': String(head.byteLength + 15 * MiB + tail.byteLength),
        },
      },
    );
  };
}

/** Each hostile neighbour, its pin, and the reason its attack is refused with, as the log says it. */
function neighbours(namespace: string) {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'as-gateway', namespace },
    spec: {
      serviceAccountName: 'causeway-gateway',
      containers: [{ name: 'c', image: 'busybox' }],
    },
  };
  const hijacked = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'gateway-settings' },
    data: { upstream: 'https://evil.example' },
  };
  const served: Array<{ service: NamedHandler; pin: ServiceScope; refusal: RegExp }> = [
    {
      // Runs a pod as the gateway's ServiceAccount (point 1).
      service: neighbour('thief', 'thief_fn', { answer: rewritten('thief_fn', { apply: [pod] }) }),
      pin: { resources: [KOPFEXAMPLES], children: ['pods'] },
      refusal: /Pod as-gateway: spec\.serviceAccountName is causeway-gateway; its scope allows default/,
    },
    {
      // Merges into an object it does not own (point 2).
      service: neighbour('hijacker', 'hijack_fn', { answer: rewritten('hijack_fn', { apply: [hijacked] }) }),
      pin: { resources: [KOPFEXAMPLES], children: ['configmaps'] },
      refusal: /ConfigMap gateway-settings exists and is not owned by the handled object/,
    },
    {
      // A child the apiserver refuses (422), which would fail every handler's cycle on the object (point 4).
      service: neighbour('refuser', 'refuse_fn', {
        answer: rewritten('refuse_fn', {
          apply: [
            { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bad' }, data: { 'not a key': 'x' } },
          ],
        }),
      }),
      pin: { resources: [KOPFEXAMPLES], children: ['configmaps'] },
      refusal: /its children could not be applied: .*configmaps\/bad failed: 422 Invalid/,
    },
    {
      // Sets the well-behaved service's result (point 3).
      service: neighbour('forger', 'forge_fn', {
        answer: rewritten('forge_fn', { patch: { status: { create_fn: 'forged' } } }),
      }),
      pin: { resources: [KOPFEXAMPLES] },
      refusal:
        /handler \\?"forge_fn\\?": its patch may not change status\.create_fn \(another service's result\)/,
    },
    {
      // Wipes the annotations, where a record may be kept (point 3).
      service: neighbour('wiper', 'wipe_fn', {
        answer: rewritten('wipe_fn', { patch: { metadata: { annotations: null } } }),
      }),
      pin: { resources: [KOPFEXAMPLES] },
      refusal: /handler \\?"wipe_fn\\?": its patch may not change metadata\.annotations as a whole/,
    },
    {
      // Shares the well-behaved service's handler id, and fails it for ever (point 3).
      service: neighbour('twin', 'create_fn', {}, () => {
        throw new TemporaryError('the twin is never ready', { delay: 1 });
      }),
      pin: { resources: [KOPFEXAMPLES] },
      refusal: /handler failed temporarily .*service=twin/,
    },
    {
      // Asks to be called again after 1e300 seconds (point 4).
      service: neighbour('wedger', 'wedge_fn', {
        answer: () =>
          Response.json(
            { protocol: PROTOCOL, error: 'busy' },
            { status: 429, headers: { 'retry-after': '1e300' } },
          ),
      }),
      pin: { resources: [KOPFEXAMPLES] },
      refusal: /handler failed temporarily .*service=wedger/,
    },
    {
      // Replies of 15 MiB on every call at once: more than its budget of bytes in flight (point 7).
      service: neighbour('flooder', 'flood_fn', { answer: flood() }),
      pin: { resources: [KOPFEXAMPLES] },
      refusal: /handler failed temporarily .*service=flooder/,
    },
  ];
  const refused: Array<{ service: NamedHandler; pin: ServiceScope; refusal: RegExp }> = [
    {
      // A manifest beyond its pin (point 6).
      service: (() => {
        const op = operator({ name: 'greedy', secret: TEST_SECRET });
        op.on.event('secrets', function steal() {});
        return op;
      })(),
      pin: { resources: [KOPFEXAMPLES] },
      refusal: /handler \\?"steal\\?" of \\?"greedy\\?" names secrets, outside the scope pinned for it/,
    },
    {
      // A webhook timeout the apiserver refuses, which would break every service's admission (point 5).
      service: (() => {
        const op = operator({ name: 'breaker', secret: TEST_SECRET });
        op.on.validate('kopfexamples', function break_fn() {});
        return hostileService(op, {
          manifest: (honest) => ({
            ...honest,
            handlers: (honest.handlers as Array<{ options?: object }>).map((handler) => ({
              ...handler,
              options: { ...handler.options, timeout: 31 },
            })),
          }),
        });
      })(),
      pin: { resources: [KOPFEXAMPLES], admission: [KOPFEXAMPLES] },
      refusal: /function service \\?"breaker\\?" is refused: .*timeout/,
    },
    {
      // A handler keyed as the gateway's own record (point 3).
      service: (() => {
        const op = operator({ name: 'impostor', secret: TEST_SECRET });
        op.on.create('kopfexamples', { id: 'causeway' }, () => ({ progress: {} }));
        return op;
      })(),
      pin: { resources: [KOPFEXAMPLES] },
      refusal: /handler \\?"causeway\\?" of \\?"impostor\\?" has the id of the gateway's own record/,
    },
  ];
  return { served, refused };
}

describe('a well-behaved service among hostile neighbours', () => {
  let client: KubeClient;
  before(async () => {
    client = await kubeClient();
    await applyFile(CRD);
  });

  it('has its objects handled, its results, progress and webhook intact, while each neighbour is refused its attack', async (t) => {
    const namespace = await testNamespace(t);
    const configMaps = `/api/v1/namespaces/${namespace}/configmaps`;
    await client.request(configMaps, {
      method: 'POST',
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'gateway-settings' },
        data: { upstream: 'https://kept' },
      },
    });
    const { served, refused } = neighbours(namespace);
    const logger = memoryLogger();
    const all = [
      { service: good() as NamedHandler, pin: { resources: [KOPFEXAMPLES], admission: [KOPFEXAMPLES] } },
      ...served,
      ...refused,
    ];
    const running = await runOperator(
      all.map(({ service }) => service),
      {
        namespaces: [namespace],
        logger,
        scopes: Object.fromEntries(all.map(({ service, pin }) => [service.name, pin])),
        // The webhook configurations are cluster-wide: named for this test alone.
        identity: { annotationPrefix: `${namespace}.causeway.dev` },
        metrics: '127.0.0.1:0',
        liveness: 'http://127.0.0.1:0/healthz',
      },
    );
    t.after(() => running.stop());
    const { gateway } = running;
    const logged = (pattern: RegExp) =>
      eventually(`a log line like ${pattern}`, async () => logger.lines.find((line) => pattern.test(line)));

    const paths = await Promise.all(
      OBJECTS.map((name) => createKopfExample(namespace, name, { field: 'kept' })),
    );

    // The well-behaved service: every object handled, its result in a place of its own (its id is
    // shared with the twin), its progress a success, nothing forged.
    for (const [index, path] of paths.entries()) {
      const object = await eventually(`good's result on ${path}`, async () => {
        const now = await client.get<KubernetesObject>(path);
        const results = (now.status?.causeway as { results?: Record<string, Record<string, unknown>> })
          ?.results;
        return results?.good?.create_fn === undefined ? undefined : now;
      });
      const causeway = object.status?.causeway as { results: Record<string, Record<string, unknown>> };
      assert.equal(causeway.results.good?.create_fn, `handled ${OBJECTS[index]}`);
      assert.equal(object.status?.create_fn, undefined, 'no one wrote the shared id’s Kopf place');
      assert.deepEqual(object.spec, { field: 'kept' });
    }

    // Its webhook answers: no neighbour's configuration broke it.
    const denied = await admissionRefusal(namespace, { field: 'forbidden' });
    assert.match(denied, /good says spec\.field must not be "forbidden"/);

    // Each attack refused (or, for a failing neighbour, its failure kept) with its reason in the log.
    for (const { service, refusal } of [...served, ...refused]) {
      const line = await logged(refusal);
      t.diagnostic(`${service.name}: ${line.slice(0, 240)}`);
    }

    // Nothing of the attacks landed.
    await assert.rejects(
      client.get(`/api/v1/namespaces/${namespace}/pods/as-gateway`),
      (error) => error instanceof ApiError && error.status === 404,
    );
    const settings = await client.get<KubernetesObject & { data: Record<string, string> }>(
      `${configMaps}/gateway-settings`,
    );
    assert.deepEqual(settings.data, { upstream: 'https://kept' });
    assert.equal(settings.metadata.ownerReferences, undefined);

    // The twin's create_fn and the well-behaved one's are called with keys of their own.
    const keyOf = (service: string) =>
      logged(
        new RegExp(`/one\\] handler .*handler=create_fn service=${service} .*idempotencyKey=(\\S+)`),
      ).then((line) => /idempotencyKey=(\S+)/.exec(line)?.[1]);
    const [goodKey, twinKey] = await Promise.all([keyOf('good'), keyOf('twin')]);
    assert.ok(goodKey && twinKey);
    assert.notEqual(goodKey, twinKey, 'two services never share an idempotency key');

    // The twin's and the wedger's failures are their own: the well-behaved service's progress is not theirs.
    const shared = await client.get<KubernetesObject>(paths[0] as string);
    const twin = await eventually('the twin’s progress', async () => {
      const now = await client.get<KubernetesObject>(paths[0] as string);
      const progress = progressOf(now, 'twin')?.create_fn;
      return progress && progress.retries > 0 ? progress : undefined;
    });
    assert.equal(twin.success, undefined);
    assert.notEqual(progressOf(shared, 'good')?.create_fn?.failure, true);
    const wedged = progressOf(await client.get<KubernetesObject>(paths[0] as string), 'wedger')?.wedge_fn;
    assert.ok(wedged?.delayedUntil, 'the wedger waits until a date');
    assert.ok(Date.parse(wedged.delayedUntil) < Date.now() + 366 * 24 * 3600 * 1000, 'a year at most');

    // The refused services, named in the metrics and the readiness body; the gateway ready for the others.
    const metrics = await scrape(gateway);
    for (const { service } of refused) {
      assert.equal(
        sample(metrics, 'causeway_function_service_refused', { service: service.name }),
        1,
        service.name,
      );
    }
    assert.ok(gateway.readiness);
    const readiness = await fetch(gateway.readiness);
    const body = (await readiness.json()) as {
      ready: boolean;
      functionServicesRefused?: Record<string, string>;
    };
    assert.equal(readiness.status, 200);
    assert.deepEqual(Object.keys(body.functionServicesRefused ?? {}).sort(), [
      'breaker',
      'greedy',
      'impostor',
    ]);

    // The flood waited for its own budget; the well-behaved service never waited.
    const budget = (service: string, name: string) =>
      sample(metrics, name, { service, budget: 'reply_bytes' });
    assert.ok(
      budget('flooder', 'causeway_function_budget_waits_total') > 0,
      'the flood waited for its budget',
    );
    assert.equal(budget('good', 'causeway_function_budget_waits_total'), 0);
    assert.ok(budget('flooder', 'causeway_function_budget_used') <= 64 * MiB);
  });
});
