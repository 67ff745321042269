/**
 * A compromised function service against a gateway that pinned its scope: whatever it answers, the
 * gateway does nothing outside that scope with its own rights. Each attack is refused with a reason in
 * the log and on the object, nothing it asked for exists, and an honest service's objects are handled
 * meanwhile.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { operator } from '../../../functions/index.ts';
import { serveFetch } from '../../../gateway/cli/commands/serve/serve.ts';
import { startGateway } from '../../../gateway/gateway.ts';
import { applyManifests } from '../../../gateway/kube/apply.ts';
import type { KubeClient } from '../../../gateway/kube/client.ts';
import { ApiError } from '../../../gateway/kube/errors.ts';
import {
  functionServiceDefinition,
  functionServicesPath,
} from '../../../gateway/services/function-service-objects.ts';
import type { KubernetesObject, ServiceScope } from '../../../protocol/index.ts';
import { testNamespace } from '../../support/cluster.ts';
import { hostileService } from '../../support/hostile-service.ts';
import {
  applyFile,
  createFunctionService,
  createKopfExample,
  eventually,
  kubeClient,
  kubeConfig,
  memoryLogger,
  progressOf,
  runOperator,
  statusOnceThere,
  TEST_SECRET,
} from '../../support/operator.ts';

const CRD = new URL('../../../examples/01-minimal/crd.yaml', import.meta.url);
const PIN: ServiceScope = { resources: ['kopfexamples.kopf.dev'], children: ['configmaps'] };
const FOREIGN_FINALIZER = 'example.com/another-controller';

/** What the hostile service's create handler asks, by the name of the object it handles. */
function attacks(namespace: string, elsewhere: string): Record<string, Record<string, unknown>> {
  return {
    'cluster-admin': {
      apply: [
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRoleBinding',
          metadata: { name: `hostile-${namespace}` },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
          subjects: [{ kind: 'ServiceAccount', name: 'default', namespace }],
        },
      ],
    },
    'other-namespace': {
      apply: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'planted', namespace: elsewhere } }],
    },
    'a-secret': {
      apply: [
        { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'planted' }, stringData: { token: 'x' } },
      ],
    },
    'stolen-finalizer': { patch: { metadata: { finalizers: null } } },
    'event-elsewhere': {
      events: [
        {
          type: 'Warning',
          reason: 'Forged',
          message: 'about an object of another namespace',
          about: { apiVersion: 'v1', kind: 'ConfigMap', name: 'victim', namespace: elsewhere },
        },
      ],
    },
    'a-child': {
      apply: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'child' }, data: { a: 'b' } }],
    },
  };
}

describe('a hostile function service within its pinned scope', () => {
  let client: KubeClient;
  before(async () => {
    client = await kubeClient();
    await applyFile(CRD);
  });

  it('refuses every answer that reaches beyond the scope, and keeps serving the others', async (t) => {
    const namespace = await testNamespace(t);
    const elsewhere = await testNamespace(t);
    const asked = attacks(namespace, elsewhere);

    const inner = operator({ name: 'hostile', secret: TEST_SECRET });
    inner.on.create('kopfexamples', function create_fn() {
      return { done: true };
    });
    const hostile = hostileService(inner, {
      answer: ({ request, answer }) => {
        const name = (request.body as KubernetesObject).metadata.name;
        const effects = asked[name];
        if (!effects) return undefined;
        const outcomes = answer.outcomes as Record<string, Record<string, unknown>>;
        return { ...answer, outcomes: { create_fn: { ...outcomes.create_fn, ...effects } } };
      },
    });
    // An honest service of another resource's objects, beside it: it sees none of this.
    const honest = operator({ name: 'honest', secret: TEST_SECRET });
    honest.on.create('configmaps', { labels: { handled: 'yes' } }, function note() {});

    const logger = memoryLogger();
    const running = await runOperator([hostile, honest], {
      namespaces: [namespace],
      logger,
      scopes: { hostile: PIN, honest: { resources: ['configmaps'] } },
    });
    t.after(() => running.stop());

    const finalizers = { finalizers: [FOREIGN_FINALIZER] };
    for (const name of Object.keys(asked)) {
      await createKopfExample(namespace, name, {}, name === 'stolen-finalizer' ? finalizers : {});
    }
    t.after(() =>
      client
        .patch(`/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/stolen-finalizer`, 'json', [
          { op: 'remove', path: '/metadata/finalizers' },
        ])
        .catch(() => {}),
    );

    const refusals: Record<string, RegExp> = {
      'cluster-admin':
        /ClusterRoleBinding hostile-\S+ is a clusterrolebindings\.rbac\.authorization\.k8s\.io, not one of the kinds its scope lets it apply \(children: configmaps\)/,
      'other-namespace': new RegExp(
        `ConfigMap planted is in namespace ${elsewhere}: children go to the object's own, ${namespace}`,
      ),
      'a-secret': /Secret planted is a secrets, not one of the kinds its scope lets it apply/,
      'stolen-finalizer': /its patch may not change metadata\.finalizers \(who holds and owns the object\)/,
      'event-elsewhere': new RegExp(
        `an event about ConfigMap ${elsewhere}/victim, which is neither the handled object nor one of its children`,
      ),
    };
    for (const [name, reason] of Object.entries(refusals)) {
      // What the user sees on the object: the handler failed, for that reason, and will be tried again.
      const progress = await eventually(`the refusal on ${name}`, async () => {
        const object = await client.get<KubernetesObject>(
          `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/${name}`,
        );
        const record = progressOf(object, 'hostile');
        return record?.create_fn?.message ? { object, message: record.create_fn.message } : undefined;
      });
      assert.match(progress.message, reason, name);
      assert.equal(progress.object.status?.create_fn, undefined, `${name}: no result recorded`);
      assert.match(logger.lines.join(''), reason, `${name}: the log says why`);
    }

    // Nothing it asked for exists, and the finalizer it tried to take off is still on.
    const missing = async (path: string) =>
      client.get(path).then(
        () => false,
        (error: unknown) => error instanceof ApiError && error.status === 404,
      );
    assert.ok(await missing(`/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/hostile-${namespace}`));
    assert.ok(await missing(`/api/v1/namespaces/${elsewhere}/configmaps/planted`));
    assert.ok(await missing(`/api/v1/namespaces/${namespace}/secrets/planted`));
    const held = await client.get<KubernetesObject>(
      `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/stolen-finalizer`,
    );
    assert.deepEqual(held.metadata.finalizers, [FOREIGN_FINALIZER]);
    const forged = await client.get<{ items: unknown[] }>(
      `/api/v1/namespaces/${elsewhere}/events?fieldSelector=reason%3DForged`,
    );
    assert.deepEqual(forged.items, []);

    // What is in scope is done, as a child of the handled object.
    assert.deepEqual(
      await statusOnceThere(`/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/a-child`, 'create_fn'),
      { done: true },
    );
    const parent = await client.get<KubernetesObject>(
      `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/a-child`,
    );
    const child = await client.get<KubernetesObject>(`/api/v1/namespaces/${namespace}/configmaps/child`);
    assert.deepEqual((child.metadata as { ownerReferences?: unknown }).ownerReferences, [
      {
        apiVersion: 'kopf.dev/v1',
        kind: 'KopfExample',
        name: 'a-child',
        uid: parent.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);

    // The honest service is served all along.
    await client.request(`/api/v1/namespaces/${namespace}/configmaps`, {
      method: 'POST',
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'noted', labels: { handled: 'yes' } } },
    });
    await eventually('the honest service’s call', async () =>
      logger.lines.some((line) => /noted\] handler succeeded .*handler=note /.test(line)) ? true : undefined,
    );
  });

  it('does not serve a service whose manifest reaches beyond its pin, saying which handler and resource, and starts all the same', async (t) => {
    const namespace = await testNamespace(t);
    const greedy = (declare?: ServiceScope) => {
      const op = operator({ name: 'greedy', secret: TEST_SECRET, ...(declare ? { scope: declare } : {}) });
      op.on.create('kopfexamples', function create_fn() {});
      return op;
    };
    // The gateway starts (it would serve the others), and says which service it refuses and why.
    const refusedWith = async (service: ReturnType<typeof greedy>, reason: RegExp) => {
      const logger = memoryLogger();
      const running = await runOperator(service, {
        namespaces: [namespace],
        logger,
        scopes: { greedy: PIN },
      });
      try {
        assert.match(
          logger.lines.join(''),
          new RegExp(`function service "greedy" is refused: ${reason.source}`),
        );
        assert.equal(running.gateway.handling, true);
      } finally {
        await running.stop();
      }
    };

    // Whole objects of Secrets sent to a service that only asked for them.
    const secrets = greedy();
    secrets.on.event('secrets', function steal() {});
    await refusedWith(
      secrets,
      /handler "steal" of "greedy" names secrets, outside the scope pinned for it \(resources: kopfexamples\.kopf\.dev\): the service is not served/,
    );
    // A webhook on objects its pin lets it watch, but not review.
    const reviewing = greedy();
    reviewing.on.mutate('kopfexamples', function sneak() {});
    await refusedWith(
      reviewing,
      /handler "sneak" of "greedy" names kopfexamples\.kopf\.dev, outside the scope pinned for it \(admission: none\)/,
    );
    // A declared scope wider than the pin, though no handler uses it yet.
    await refusedWith(
      greedy({
        resources: ['kopfexamples.kopf.dev', 'secrets'],
        children: ['clusterrolebindings.rbac.authorization.k8s.io'],
      }),
      /"greedy" declares a scope beyond the one pinned for it: resources: secrets; children: clusterrolebindings\.rbac\.authorization\.k8s\.io/,
    );
  });

  it('serves a handler for every resource (*) on those of its scope only', async (t) => {
    const namespace = await testNamespace(t);
    const op = operator({ name: 'everything', secret: TEST_SECRET });
    op.on.event('*', function watch_all() {});
    const logger = memoryLogger();
    const running = await runOperator(op, { namespaces: [namespace], logger, scopes: { everything: PIN } });
    t.after(() => running.stop());
    const served = logger.lines.filter((line) =>
      /handler "watch_all" of "everything" \(\*\) is served on/.test(line),
    );
    assert.equal(served.length, 1, logger.lines.join(''));
    assert.match(served[0] as string, /is served on kopfexamples\.kopf\.dev\/v1\n$/);
  });

  it('narrows the namespaces a service sees to those of its pin', async (t) => {
    const inside = await testNamespace(t);
    const outside = await testNamespace(t);
    const narrow = operator({ name: 'narrow', secret: TEST_SECRET });
    narrow.on.create('kopfexamples', function narrow_fn() {
      return 'seen';
    });
    const wide = operator({ name: 'wide', secret: TEST_SECRET });
    wide.on.create('kopfexamples', function wide_fn() {
      return 'seen';
    });
    const running = await runOperator([narrow, wide], {
      namespaces: [inside, outside],
      scopes: { narrow: { ...PIN, namespaces: [inside] }, wide: PIN },
    });
    t.after(() => running.stop());

    const there = await createKopfExample(inside, 'there');
    const away = await createKopfExample(outside, 'away');
    assert.equal(await statusOnceThere(there, 'narrow_fn'), 'seen');
    assert.equal(await statusOnceThere(there, 'wide_fn'), 'seen');
    // The services' handlers of one object are called in one cycle: once the wide one's result is
    // there, the narrow one was not due.
    assert.equal(await statusOnceThere(away, 'wide_fn'), 'seen');
    assert.equal((await client.get<KubernetesObject>(away)).status?.narrow_fn, undefined);
  });

  it('shows a FunctionService whose manifest reaches beyond its spec.scope as not served, and serves the others', async (t) => {
    const namespace = await testNamespace(t);
    await applyManifests(client, [functionServiceDefinition()], { fieldManager: 'causeway-tests' });
    const greedy = operator({ name: 'greedy', secret: TEST_SECRET });
    greedy.on.event('secrets', function steal() {});
    const honest = operator({ name: 'honest', secret: TEST_SECRET });
    honest.on.create('kopfexamples', function create_fn() {
      return 'handled';
    });
    const servers = await Promise.all(
      [greedy, honest].map((op) => serveFetch(op, { port: 0, host: '127.0.0.1' })),
    );
    t.after(() => Promise.all(servers.map((server) => server.close())));
    const collection = functionServicesPath(namespace);
    for (const [index, name] of ['greedy', 'honest'].entries()) {
      await createFunctionService(namespace, name, { url: servers[index]?.url, scope: PIN });
    }
    const logger = memoryLogger();
    const gateway = await startGateway({
      functions: [],
      secret: new TextEncoder().encode(TEST_SECRET),
      functionServices: namespace,
      kubeconfig: await kubeConfig(),
      namespaces: [namespace],
      logger,
      settings: { calls: { allowLoopback: true } }, // the services are on this host
    });
    t.after(() => gateway.stop());

    const refused = await eventually('the greedy FunctionService’s status', async () => {
      const status = (await client.get<KubernetesObject>(`${collection}/greedy`)).status;
      return typeof status?.lastError === 'string' ? status : undefined;
    });
    assert.equal(refused.phase, 'Refused');
    assert.match(
      String(refused.lastError),
      /handler "steal" of "greedy" names secrets, outside the scope pinned for it \(resources: kopfexamples\.kopf\.dev\)/,
    );
    const path = await createKopfExample(namespace, 'served');
    assert.equal(await statusOnceThere(path, 'create_fn'), 'handled');
  });
});
