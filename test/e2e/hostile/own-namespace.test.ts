/**
 * The gateway's own namespace (its pod's: its account, its signing keys, its CAs) against function
 * services, on the real apiserver: no handler sees an object there, even in a namespace the gateway
 * watches, and no child or event of an answer goes there, scoped or not. Each attempt is refused with
 * the reason on the object and in the log, nothing lands there, and the same service's other objects
 * are handled meanwhile.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { operator } from '../../../functions/index.ts';
import type { KubeClient } from '../../../gateway/kube/client.ts';
import { ApiError } from '../../../gateway/kube/errors.ts';
import type { KubernetesObject, ServiceScope } from '../../../protocol/index.ts';
import { testNamespace } from '../../support/cluster.ts';
import { hostileService } from '../../support/hostile-service.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  kubeClient,
  memoryLogger,
  progressOf,
  runOperator,
  statusOnceThere,
  TEST_SECRET,
} from '../../support/operator.ts';

const CRD = new URL('../../../examples/01-minimal/crd.yaml', import.meta.url);
const PIN: ServiceScope = { resources: ['kopfexamples.kopf.dev'], children: ['configmaps'] };

/** What the service's create handler asks, by the name of the object it handles. */
function attacks(own: string): Record<string, Record<string, unknown>> {
  return {
    'child-in-own': {
      apply: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'planted', namespace: own } }],
    },
    'event-in-own': {
      events: [
        {
          type: 'Warning',
          reason: 'Forged',
          message: "as if the gateway's own",
          about: { apiVersion: 'v1', kind: 'ConfigMap', name: 'causeway-signing-keys', namespace: own },
        },
      ],
    },
  };
}

describe("a function service and the gateway's own namespace", () => {
  let client: KubeClient;
  before(async () => {
    client = await kubeClient();
    await applyFile(CRD);
  });

  for (const [pinned, scope] of [
    ['pinned', PIN],
    ['unscoped', undefined],
  ] as const) {
    it(`handles nothing there and puts nothing there, ${pinned}, while the service's other objects are handled`, async (t) => {
      const own = await testNamespace(t);
      const served = await testNamespace(t);
      const asked = attacks(own);
      const called: string[] = [];
      const inner = operator({ name: 'hostile', secret: TEST_SECRET });
      inner.on.create('kopfexamples', function create_fn() {
        return { done: true };
      });
      const hostile = hostileService(inner, {
        answer: ({ request, answer }) => {
          const object = request.body as KubernetesObject;
          called.push(`${object.metadata.namespace}/${object.metadata.name}`);
          const effects = asked[object.metadata.name];
          if (!effects) return undefined;
          const outcomes = answer.outcomes as Record<string, Record<string, unknown>>;
          return { ...answer, outcomes: { create_fn: { ...outcomes.create_fn, ...effects } } };
        },
      });
      // In the gateway's namespace before it starts: its first list has it, and no handler takes it.
      await createKopfExample(own, 'in-own', {});

      const logger = memoryLogger();
      // Told to watch its own namespace too (the CLI refuses that without --serve-own-namespace): its
      // handlers still see nothing there.
      const running = await runOperator(hostile, {
        namespaces: [served, own],
        ownNamespace: own,
        logger,
        ...(scope ? { scopes: { hostile: scope } } : {}),
      });
      t.after(() => running.stop());

      for (const name of Object.keys(asked)) await createKopfExample(served, name, {});
      const reason = (what: string) =>
        new RegExp(
          `${what}\\[0\\] would be in namespace ${own}, the gateway's own, which it serves to no function service`,
        );
      for (const [name, what] of [
        ['child-in-own', 'apply'],
        ['event-in-own', 'events'],
      ] as const) {
        const progress = await eventually(`the refusal on ${name}`, async () => {
          const object = await client.get<KubernetesObject>(
            `/apis/kopf.dev/v1/namespaces/${served}/kopfexamples/${name}`,
          );
          const message = progressOf(object, 'hostile')?.create_fn?.message;
          return message ? { object, message } : undefined;
        });
        assert.match(progress.message, reason(what), name);
        assert.equal(progress.object.status?.create_fn, undefined, `${name}: no result recorded`);
        assert.match(logger.lines.join(''), reason(what), `${name}: the log says why`);
      }

      // An object of the served namespace is handled as ever.
      await createKopfExample(served, 'honest', {});
      assert.deepEqual(
        await statusOnceThere(`/apis/kopf.dev/v1/namespaces/${served}/kopfexamples/honest`, 'create_fn'),
        { done: true },
      );
      // The one in its own namespace, listed before any of these, was never sent to the service, and
      // holds no result, record or finalizer of the gateway.
      assert.ok(!called.includes(`${own}/in-own`), called.join(', '));
      const untouched = await client.get<KubernetesObject>(
        `/apis/kopf.dev/v1/namespaces/${own}/kopfexamples/in-own`,
      );
      assert.equal(untouched.status, undefined);
      assert.equal(untouched.metadata.finalizers, undefined);

      // Nothing the service asked landed in the gateway's namespace.
      await assert.rejects(
        client.get(`/api/v1/namespaces/${own}/configmaps/planted`),
        (error) => error instanceof ApiError && error.status === 404,
      );
      const forged = await client.get<{ items: unknown[] }>(
        `/api/v1/namespaces/${own}/events?fieldSelector=reason%3DForged`,
      );
      assert.deepEqual(forged.items, []);
    });
  }
});
