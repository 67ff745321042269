/**
 * Changes made while the gateway was down are handled when it comes back, from the state kept on the
 * objects: a changed spec is an update with the right diff, a deletion held by the finalizer runs the
 * delete handler, a new object is created, and handled objects that did not change are resumed.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { operator } from '../../functions/index.ts';
import { applyManifests } from '../../gateway/kube/apply.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import { ApiError } from '../../gateway/kube/errors.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import { customResourceDefinition, uniqueGroup } from '../support/crds.ts';
import { eventually, kubeClient, memoryLogger, runOperator, TEST_SECRET } from '../support/operator.ts';

const group = uniqueGroup('downtime');
const kind = { group, kind: 'Sleeper', plural: 'sleepers' };
const RESOURCE = `${kind.plural}.${group}`;
const FINALIZER = 'causeway.dev/finalizer';

/** Every kind of handler a restart can call; each call is recorded as `<kind> <name> [<diff>]`. */
function sleeperOperator() {
  const calls: string[] = [];
  const op = operator({ name: 'sleeper', secret: TEST_SECRET });
  op.on.create(RESOURCE, async function create_fn({ name }) {
    calls.push(`create ${name}`);
    return { created: name };
  });
  op.on.update(RESOURCE, async function update_fn({ name, diff }) {
    calls.push(`update ${name} ${JSON.stringify(diff)}`);
    return { diff };
  });
  op.on.delete(RESOURCE, async function delete_fn({ name }) {
    calls.push(`delete ${name}`);
  });
  op.on.resume(RESOURCE, async function resume_fn({ name }) {
    calls.push(`resume ${name}`);
    return { resumed: name };
  });
  op.on.resume(RESOURCE, { deleted: true }, async function resume_deleting_fn({ name, meta }) {
    if (meta.deletionTimestamp) calls.push(`resume-deleting ${name}`);
  });
  return { op, calls };
}

describe('changes while the gateway was down', () => {
  let client: KubeClient;
  before(async () => {
    client = await kubeClient();
    await applyManifests(client, [customResourceDefinition(kind)], { fieldManager: 'causeway-tests' });
  });

  it('handles on restart what changed meanwhile: update with its diff, delete, create; resumes every object from before, as Kopf', async (t) => {
    const namespace = await testNamespace(t);
    const path = `/apis/${group}/v1/namespaces/${namespace}/${kind.plural}`;
    const read = (name: string) => client.get<KubernetesObject>(`${path}/${name}`);
    const create = (name: string) =>
      client.request(path, {
        method: 'POST',
        body: { apiVersion: `${group}/v1`, kind: kind.kind, metadata: { name }, spec: { field: 'a' } },
      });
    const statusOf = (name: string, key: string) =>
      eventually(`status.${key} of ${name}`, async () => {
        const object = await read(name);
        return object.status?.[key] === undefined ? undefined : object;
      });

    const first = sleeperOperator();
    const running = await runOperator(first.op, { namespaces: [namespace] });
    for (const name of ['unchanged', 'changed', 'deleted']) await create(name);
    for (const name of ['unchanged', 'changed', 'deleted']) {
      const handled = await statusOf(name, 'create_fn');
      assert.deepEqual(handled.metadata.finalizers, [FINALIZER]);
    }
    await running.stop();
    assert.deepEqual(first.calls.sort(), ['create changed', 'create deleted', 'create unchanged']);

    // While it is down:
    await client.patch(`${path}/changed`, 'merge', { spec: { field: 'b' } });
    await client.request(`${path}/deleted`, { method: 'DELETE' });
    const held = await read('deleted');
    assert.ok(held.metadata.deletionTimestamp, 'the deleted object is held by the finalizer');
    await create('new');

    const second = sleeperOperator();
    const logger = memoryLogger();
    const restarted = await runOperator(second.op, { namespaces: [namespace], logger });
    t.after(() => restarted.stop());
    // Then the objects left hold the finalizer of a gateway that is gone: release them, so that the
    // test namespace can go.
    t.after(async () => {
      for (const name of ['unchanged', 'changed', 'new']) {
        await client.patch(`${path}/${name}`, 'json', [{ op: 'remove', path: '/metadata/finalizers' }]);
      }
    });

    const changed = await statusOf('changed', 'update_fn');
    assert.deepEqual(changed.status?.update_fn, { diff: [['change', ['spec', 'field'], 'a', 'b']] });
    const created = await statusOf('new', 'create_fn');
    assert.deepEqual(created.status?.create_fn, { created: 'new' });
    const resumed = await statusOf('unchanged', 'resume_fn');
    assert.deepEqual(resumed.status?.resume_fn, { resumed: 'unchanged' });
    // An object made after the restart is not one to resume.
    await create('later');
    t.after(() => client.patch(`${path}/later`, 'json', [{ op: 'remove', path: '/metadata/finalizers' }]));
    await statusOf('later', 'create_fn');
    await eventually('the deleted object to be gone', async () => {
      try {
        await read('deleted');
        return undefined;
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) return true;
        throw error;
      }
    });

    assert.deepEqual(
      second.calls.sort(),
      [
        'create later',
        'create new',
        'delete deleted',
        'resume changed',
        'resume new',
        'resume unchanged',
        'resume-deleting deleted',
        'update changed [["change",["spec","field"],"a","b"]]',
      ],
      `the restarted gateway said:\n${logger.lines.join('')}`,
    );
    // Kopf mixes resume handlers into the creation or update of an object from before its start.
    assert.deepEqual((await read('changed')).status?.resume_fn, { resumed: 'changed' });
    assert.deepEqual((await read('new')).status?.resume_fn, { resumed: 'new' });
    assert.equal(
      (await read('later')).status?.resume_fn,
      undefined,
      'an object made after the start is created only',
    );
  });
});
