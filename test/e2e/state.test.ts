/** Where the handled-record goes, on real CRDs: the status when it keeps it, annotations otherwise. */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { operator, TemporaryError } from '../../functions/index.ts';
import { applyManifests } from '../../gateway/kube/apply.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import { customResourceDefinition, uniqueGroup } from '../support/crds.ts';
import {
  applyFile,
  eventually,
  kubeClient,
  memoryLogger,
  progressOf,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';

const group = uniqueGroup('state');
const RECORD = 'causeway.dev/last-handled';
const STRICTS = { group, plural: 'stricts', kind: 'Strict' };
const KOPF_EXAMPLES = { group: 'kopf.dev', plural: 'kopfexamples', kind: 'KopfExample' };

/** A CRD whose status keeps `create_fn` but prunes every other field, `causeway` included. */
function strictCrd(): KubernetesObject {
  return customResourceDefinition(STRICTS, {
    type: 'object',
    properties: {
      spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      status: {
        type: 'object',
        properties: { create_fn: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    },
  });
}

/** The gateway's record on an object, in its status. */
const recordOf = (object: KubernetesObject) =>
  (object.status?.causeway ?? {}) as { essence?: string; progress?: Record<string, unknown> };

function greeter(name: string) {
  const op = operator({ name, secret: TEST_SECRET });
  op.on.create(`stricts.${group}`, async function create_fn({ name: objectName }) {
    return { message: `hello ${objectName}` };
  });
  return op;
}

describe('where the handled-record is kept', () => {
  let client: KubeClient;
  before(async () => {
    client = await kubeClient();
    await applyManifests(client, [strictCrd()], { fieldManager: 'causeway-tests' });
  });

  async function createAndWait(namespace: string, name: string, kind = STRICTS): Promise<KubernetesObject> {
    const path = `/apis/${kind.group}/v1/namespaces/${namespace}/${kind.plural}`;
    await client.request(path, {
      method: 'POST',
      body: { apiVersion: `${kind.group}/v1`, kind: kind.kind, metadata: { name } },
    });
    return eventually(`the record on ${name}`, async () => {
      const object = await client.get<KubernetesObject>(`${path}/${name}`);
      return object.metadata.annotations?.[RECORD] === undefined ? undefined : object;
    });
  }

  it('goes to an annotation when the status schema would prune it, with a warning, and the result still lands', async (t) => {
    const namespace = await testNamespace(t);
    const logger = memoryLogger();
    const running = await runOperator(greeter('strict'), {
      namespaces: [namespace],
      logger,
      transport: 'in-process',
    });
    t.after(() => running.stop());

    const object = await createAndWait(namespace, 'pruned');
    assert.deepEqual(object.status, { create_fn: { message: 'hello pruned' } });
    assert.ok(
      logger.lines.some((line) =>
        /schema of status prunes status\.causeway; keeping state in annotations/.test(line),
      ),
    );
  });

  it('goes to an annotation when the gateway is told so, though the status would keep it; a restart honours it', async (t) => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    const namespace = await testNamespace(t);
    const calls: string[] = [];
    const op = operator({ name: 'annotated', secret: TEST_SECRET });
    op.on.create('kopfexamples', async function create_fn({ name }) {
      calls.push(name);
      return { message: `hello ${name}` };
    });
    const options = {
      namespaces: [namespace],
      settings: { persistence: { stateIn: 'annotations' } },
      transport: 'in-process',
    } as const;
    const first = await runOperator(op, options);
    const object = await createAndWait(namespace, 'told', KOPF_EXAMPLES);
    assert.equal(typeof object.metadata.annotations?.[RECORD], 'string');
    assert.deepEqual(
      object.status,
      { create_fn: { message: 'hello told' } },
      'nothing of the gateway in the status',
    );
    await first.stop();

    const second = await runOperator(op, options);
    t.after(() => second.stop());
    await createAndWait(namespace, 'told-later', KOPF_EXAMPLES);
    assert.deepEqual(calls, ['told', 'told-later']);
  });

  it('goes on with a change an older gateway left half done, its progress kept by id alone: no handler runs again, and the progress is rewritten by service', async (t) => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    const namespace = await testNamespace(t);
    const path = `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/upgraded`;
    await client.request(`/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`, {
      method: 'POST',
      body: { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name: 'upgraded' }, spec: {} },
    });
    // As a gateway before progress was kept by service left it: create_fn done, step_fn failed once.
    const started = new Date().toISOString();
    await client.patch(`${path}/status`, 'merge', {
      status: {
        causeway: {
          progress: {
            create_fn: { started, retries: 0, success: true },
            step_fn: { started, retries: 1, message: 'not yet' },
          },
        },
      },
    });
    const calls: string[] = [];
    const op = operator({ name: 'upgraded', secret: TEST_SECRET });
    op.on.create('kopfexamples', async function create_fn() {
      calls.push('create_fn');
      return { again: true };
    });
    op.on.create('kopfexamples', async function step_fn({ retry }) {
      calls.push(`step_fn:${retry}`);
      if (retry === 1) throw new TemporaryError('still not', { delay: 1 });
      return { step: retry };
    });
    const running = await runOperator(op, { namespaces: [namespace] });
    t.after(() => running.stop());

    const midway = await eventually('the progress rewritten by service', async () => {
      const object = await client.get<KubernetesObject>(path);
      return progressOf(object, 'upgraded')?.step_fn?.retries === 2 ? object : undefined;
    });
    assert.deepEqual(
      Object.keys(recordOf(midway).progress ?? {}),
      ['upgraded'],
      'the records by id alone are gone',
    );
    assert.equal(progressOf(midway, 'upgraded')?.create_fn?.success, true);
    const handled = await eventually('the change handled', async () => {
      const object = await client.get<KubernetesObject>(path);
      return object.status?.step_fn === undefined ? undefined : object;
    });
    assert.deepEqual(handled.status?.step_fn, { step: 2 });
    assert.equal(
      handled.status?.create_fn,
      undefined,
      'create_fn, done before the upgrade, is not called again',
    );
    assert.deepEqual(calls, ['step_fn:1', 'step_fn:2']);
    assert.equal(recordOf(handled).progress, undefined, 'handled: the progress purged');
  });
});
