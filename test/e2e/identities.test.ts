/**
 * Two Causeway deployments serving the same objects for different purposes, told apart by their
 * identities: each handles every object, keeps its own record and its own finalizer, runs its own
 * delete handler, and never erases the other's state.
 */
import assert from 'node:assert/strict';
import { before, describe, it, type TestContext } from 'node:test';
import { operator } from '../../functions/index.ts';
import type { Identity } from '../../gateway/identity.ts';
import { applyManifests } from '../../gateway/kube/apply.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import { ApiError } from '../../gateway/kube/errors.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import { customResourceDefinition, uniqueGroup } from '../support/crds.ts';
import {
  eventually,
  kubeClient,
  memoryLogger,
  type RunningOperator,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';

const group = uniqueGroup('identity');
const kind = { group, kind: 'Twin', plural: 'twins' };
const RESOURCE = `${kind.plural}.${group}`;

function identity(name: string): Identity {
  return {
    statusKey: name,
    annotationPrefix: `${name}.causeway.test`,
    finalizer: `${name}.causeway.test/finalizer`,
    fieldManager: name,
  };
}

interface Call {
  kind: 'create' | 'delete';
  name: string;
  idempotencyKey: string;
}

/** One deployment: its own service, handler ids and identity; `start()` runs a gateway for it. */
class Deployment {
  readonly name: string;
  readonly calls: Call[] = [];
  readonly logger = memoryLogger();
  readonly finalizer: string;
  running: RunningOperator | undefined;
  readonly #start: () => Promise<RunningOperator>;

  constructor(name: string, namespace: string) {
    this.name = name;
    const op = operator({ name, secret: TEST_SECRET });
    op.on.create(RESOURCE, { id: `${name}_create` }, async ({ name: object, idempotencyKey }) => {
      this.calls.push({ kind: 'create', name: object, idempotencyKey });
      return { by: name };
    });
    op.on.delete(RESOURCE, { id: `${name}_delete` }, async ({ name: object, idempotencyKey }) => {
      this.calls.push({ kind: 'delete', name: object, idempotencyKey });
    });
    this.finalizer = identity(name).finalizer;
    this.#start = () =>
      runOperator(op, { namespaces: [namespace], identity: identity(name), logger: this.logger });
  }

  async start(): Promise<void> {
    this.running = await this.#start();
  }

  async stop(): Promise<void> {
    await this.running?.stop();
    this.running = undefined;
  }

  /** Its calls, as `<kind> <object>`, sorted. */
  summary(): string[] {
    return this.calls.map((call) => `${call.kind} ${call.name}`).sort();
  }
}

describe('two deployments on the same objects', () => {
  let client: KubeClient;
  before(async () => {
    client = await kubeClient();
    await applyManifests(client, [customResourceDefinition(kind)], { fieldManager: 'causeway-tests' });
  });

  /** Both deployments running in a fresh namespace, and `names` created and handled by both. */
  async function handledByBoth(t: TestContext, names: string[]) {
    const namespace = await testNamespace(t);
    const alpha = new Deployment('alpha', namespace);
    const beta = new Deployment('beta', namespace);
    await Promise.all([alpha.start(), beta.start()]);
    t.after(() => Promise.all([alpha.stop(), beta.stop()]));
    const path = `/apis/${group}/v1/namespaces/${namespace}/${kind.plural}`;
    const read = (name: string) => client.get<KubernetesObject>(`${path}/${name}`);
    const create = async (name: string) => {
      await client.request(path, {
        method: 'POST',
        body: { apiVersion: `${group}/v1`, kind: kind.kind, metadata: { name }, spec: { size: 1 } },
      });
      return eventually(`both results and both records on ${name}`, async () => {
        const object = await read(name);
        const done = ['alpha', 'beta'].every(
          (key) =>
            object.status?.[`${key}_create`] !== undefined &&
            (object.status?.[key] as { essence?: unknown } | undefined)?.essence !== undefined,
        );
        return done ? object : undefined;
      });
    };
    const gone = (name: string) =>
      eventually(`${name} to be gone`, async () => {
        try {
          await read(name);
          return undefined;
        } catch (error) {
          if (error instanceof ApiError && error.status === 404) return true;
          throw error;
        }
      });
    const objects = [];
    for (const name of names) objects.push(await create(name));
    return { path, read, create, gone, alpha, beta, objects };
  }

  it('each handles every object, with its own results, record and finalizer; neither erases the other’s', async (t) => {
    const { alpha, beta, objects, create } = await handledByBoth(t, ['one', 'two']);
    for (const object of objects) {
      assert.deepEqual(object.status?.alpha_create, { by: 'alpha' });
      assert.deepEqual(object.status?.beta_create, { by: 'beta' });
      assert.equal(object.status?.causeway, undefined, 'nothing under the default identity');
      assert.deepEqual([...(object.metadata.finalizers ?? [])].sort(), [alpha.finalizer, beta.finalizer]);
      const managers = (object.metadata.managedFields as Array<{ manager: string }>).map(
        (entry) => entry.manager,
      );
      assert.ok(managers.includes('alpha') && managers.includes('beta'), `field managers: ${managers}`);
    }

    // Restarted, each finds its own record intact on every object: no create handler runs again. The
    // restarted gateways queued one and two when they listed them, before three was created, so by the
    // time three is handled they have been looked at.
    await Promise.all([alpha.stop(), beta.stop()]);
    await Promise.all([alpha.start(), beta.start()]);
    await create('three');
    const once = ['create one', 'create three', 'create two'];
    assert.deepEqual({ alpha: alpha.summary(), beta: beta.summary() }, { alpha: once, beta: once });
  });

  it('holds a deleted object until both delete handlers ran, each once, one deployment after the other', async (t) => {
    const { path, read, gone, alpha, beta } = await handledByBoth(t, ['held']);
    await beta.stop();
    await client.request(`${path}/held`, { method: 'DELETE' });

    const held = await eventually('alpha to release the object', async () => {
      const object = await read('held');
      return object.metadata.finalizers?.includes(alpha.finalizer) ? undefined : object;
    });
    assert.ok(held.metadata.deletionTimestamp);
    assert.deepEqual(held.metadata.finalizers, [beta.finalizer], 'still held by beta');
    await beta.start();
    await gone('held');

    // Once its delete handler has succeeded and its finalizer is off, the object held by another's
    // finalizer is no concern of alpha's any more: its own write must not make it call again.
    assert.deepEqual(
      { alpha: alpha.summary(), beta: beta.summary() },
      { alpha: ['create held', 'delete held'], beta: ['create held', 'delete held'] },
      `each delete handler once; alpha said:\n${alpha.logger.lines.join('')}`,
    );
  });

  it('deletes an object that both release at once, each delete handler once', async (t) => {
    const { path, gone, alpha, beta } = await handledByBoth(t, ['one', 'two']);
    for (const name of ['one', 'two']) await client.request(`${path}/${name}`, { method: 'DELETE' });
    await gone('one');
    await gone('two');

    for (const deployment of [alpha, beta]) {
      for (const name of ['one', 'two']) {
        const keys = deployment.calls.filter((call) => call.kind === 'delete' && call.name === name);
        assert.equal(new Set(keys.map((call) => call.idempotencyKey)).size, 1, 'one key per deletion');
      }
    }
    // Both remove their finalizers with patches guarded by the same resourceVersion: the one that loses
    // the race must retry the removal, not call its delete handler again.
    const once = ['create one', 'create two', 'delete one', 'delete two'];
    assert.deepEqual(
      { alpha: alpha.summary(), beta: beta.summary() },
      { alpha: once, beta: once },
      `each delete handler once per object; the gateways said:\n${alpha.logger.lines.join('')}${beta.logger.lines.join('')}`,
    );
  });
});
