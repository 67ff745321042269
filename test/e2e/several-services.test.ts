/**
 * Several function services behind one gateway, on the same resource: each is called once per object
 * and cycle with its own due handlers, in parallel, and what they all return lands in one status write.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { countWrites, difference } from '../../bench/metrics.ts';
import { type Operator, operator } from '../../functions/index.ts';
import type { FetchHandler } from '../../gateway/dispatch/transport.ts';
import { applyManifests } from '../../gateway/kube/apply.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import {
  type InvocationBatch,
  type InvocationRequest,
  type KubernetesObject,
  PATHS,
} from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import { customResourceDefinition, uniqueGroup } from '../support/crds.ts';
import { everythingHandled } from '../support/metrics.ts';
import { eventually, kubeClient, memoryLogger, runOperator, TEST_SECRET } from '../support/operator.ts';

const group = uniqueGroup('several');
const kind = { group, kind: 'Shared', plural: 'shareds' };
const RESOURCE = `${kind.plural}.${group}`;
const NAMES = ['one', 'two', 'three'];

interface Invocation {
  reason: string;
  name: string;
  handlers: string[];
}

/** The service as the gateway sees it over HTTP, counting the calls it receives, alone or in batches. */
function counting(op: Operator): FetchHandler & { name: string; invocations: Invocation[] } {
  const invocations: Invocation[] = [];
  return {
    name: op.name,
    invocations,
    async fetch(request: Request): Promise<Response> {
      if (new URL(request.url).pathname === PATHS.invoke) {
        const body = (await request.clone().json()) as InvocationRequest | InvocationBatch;
        for (const call of 'batch' in body ? body.batch : [body]) {
          invocations.push({
            reason: call.reason,
            name: call.body.metadata.name,
            handlers: call.handlers.map((handler) => handler.id),
          });
        }
      }
      return op.fetch(request);
    },
  };
}

/** A service named `prefix` with create and update handlers whose ids start with it. */
function service(prefix: string) {
  const op = operator({ name: prefix, secret: TEST_SECRET });
  op.on.create(RESOURCE, { id: `${prefix}_create` }, async ({ name }) => ({ by: prefix, name }));
  op.on.update(RESOURCE, { id: `${prefix}_update` }, async ({ diff }) => ({ by: prefix, diff }));
  return counting(op);
}

describe('several function services behind one gateway', () => {
  let client: KubeClient;
  before(async () => {
    client = await kubeClient();
    await applyManifests(client, [customResourceDefinition(kind)], { fieldManager: 'causeway-tests' });
  });

  const writes = async () => countWrites(await client.request<string>('/metrics'), [kind.plural], group);

  it('calls each service once per object and cycle, and stores both results in one status write', async (t) => {
    const namespace = await testNamespace(t);
    const alpha = service('alpha');
    const beta = service('beta');
    // A third service sees every watch event the gateway sees, its own writes included.
    const seen: KubernetesObject[] = [];
    const witness = operator({ name: 'witness', secret: TEST_SECRET });
    witness.on.event(RESOURCE, async function witness_fn({ body }) {
      seen.push(body as KubernetesObject);
    });
    const logger = memoryLogger();
    const running = await runOperator([alpha, beta, witness], {
      namespaces: [namespace],
      logger,
      metrics: '127.0.0.1:0',
    });
    t.after(() => running.stop());
    assert.ok(logger.lines.some((line) => /function service "alpha" at http:\/\/127\.0\.0\.1:/.test(line)));
    assert.ok(logger.lines.some((line) => /function service "beta" at http:\/\/127\.0\.0\.1:/.test(line)));

    const path = `/apis/${group}/v1/namespaces/${namespace}/${kind.plural}`;
    const read = (name: string) => client.get<KubernetesObject>(`${path}/${name}`);
    const allHave = (keys: string[]) =>
      eventually(`${keys.join(' and ')} on every object`, async () => {
        const objects = await Promise.all(NAMES.map(read));
        return objects.every((object) => keys.every((key) => object.status?.[key] !== undefined))
          ? objects
          : undefined;
      });
    const before = await writes();

    for (const name of NAMES) {
      await client.request(path, {
        method: 'POST',
        body: { apiVersion: `${group}/v1`, kind: kind.kind, metadata: { name }, spec: { size: 1 } },
      });
    }
    const created = await allHave(['alpha_create', 'beta_create']);
    for (const object of created) {
      const name = object.metadata.name;
      assert.deepEqual(object.status?.alpha_create, { by: 'alpha', name });
      assert.deepEqual(object.status?.beta_create, { by: 'beta', name });
      const managers = (object.metadata.managedFields as Array<{ manager: string; subresource?: string }>)
        .filter((entry) => entry.manager === 'causeway')
        .map((entry) => entry.subresource ?? 'object');
      assert.deepEqual(managers, ['status'], `${name}: the gateway wrote only the status`);
    }

    for (const name of NAMES) await client.patch(`${path}/${name}`, 'merge', { spec: { size: 2 } });
    const updated = await allHave(['alpha_update', 'beta_update']);
    const diff = [['change', ['spec', 'size'], 1, 2]];
    for (const object of updated) {
      assert.deepEqual(object.status?.alpha_update, { by: 'alpha', diff });
      assert.deepEqual(object.status?.beta_update, { by: 'beta', diff });
    }

    // A second call to either service, or a second write for the other's result, would come from the
    // cycle of the gateway's own write, once the watch shows it: so, that shown and that cycle over.
    await eventually('the watch to show the gateway its writes', async () =>
      NAMES.every((name) =>
        seen.some(
          (body) => body.metadata.name === name && body.status?.beta_update && body.status?.alpha_update,
        ),
      )
        ? true
        : undefined,
    );
    await everythingHandled(running.gateway);
    for (const [prefix, { invocations }] of [
      ['alpha', alpha],
      ['beta', beta],
    ] as const) {
      const sorted = [...invocations].sort(
        (a, b) => a.reason.localeCompare(b.reason) || a.name.localeCompare(b.name),
      );
      assert.deepEqual(
        sorted,
        [
          ...['one', 'three', 'two'].map((name) => ({
            reason: 'create',
            name,
            handlers: [`${prefix}_create`],
          })),
          ...['one', 'three', 'two'].map((name) => ({
            reason: 'update',
            name,
            handlers: [`${prefix}_update`],
          })),
        ],
        `${prefix}: one call per object and cycle`,
      );
    }

    // The test's own: 3 POSTs, 3 spec PATCHes. The gateway's: one status PATCH per object and cycle,
    // with both services' results and the handled-record together: 3 for the creations, 3 for the updates.
    const { [`DELETE ${kind.plural}`]: _deletes, ...spent } = difference(await writes(), before).byRequest;
    assert.deepEqual(spent, {
      [`POST ${kind.plural}`]: 3,
      [`PATCH ${kind.plural}`]: 3,
      [`PATCH ${kind.plural}/status`]: 6,
    });
  });
});
