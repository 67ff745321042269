/**
 * Function services as FunctionService objects: the gateway, told to look in a namespace, serves
 * each as it is added, follows a change of its URL, and stops calling it when it is removed, all
 * without a restart; the object's status says what the gateway found. The calls are signed with a
 * secret shared with that service alone, named by the object (`secretRef`).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { operator } from '../../functions/index.ts';
import { serveFetch } from '../../gateway/cli/serve.ts';
import {
  FUNCTION_SERVICE,
  functionServiceDefinition,
} from '../../gateway/engines/function-service-objects.ts';
import { startGateway } from '../../gateway/gateway.ts';
import { applyManifests } from '../../gateway/kube/apply.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  kubeClient,
  kubeConfig,
  memoryLogger,
  statusOnceThere,
  TEST_SECRET,
} from '../support/operator.ts';
import { freePort } from '../support/processes.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);

/** One version of the "billing" service: its create handler says which. */
function billing(version: number) {
  const op = operator({ name: 'billing', secret: TEST_SECRET });
  op.on.create('kopfexamples', function create_fn() {
    return { version };
  });
  return op;
}

describe('FunctionService objects', () => {
  it('are served as they are added, changed and removed, with no restart, their status saying what the gateway found', async (t) => {
    await applyFile(CRD);
    const client = await kubeClient();
    await applyManifests(client, [functionServiceDefinition()], { fieldManager: 'causeway-tests' });
    const namespace = await testNamespace(t);
    const servers = await Promise.all(
      [billing(1), billing(2)].map((op) => serveFetch(op, { port: 0, host: '127.0.0.1' })),
    );
    t.after(() => Promise.all(servers.map((server) => server.close())));
    const [first, second] = servers.map((server) => server.url) as [string, string];
    await client.request(`/api/v1/namespaces/${namespace}/secrets`, {
      method: 'POST',
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'billing-secret' },
        stringData: { secret: TEST_SECRET },
      },
    });

    const collection = `/apis/${FUNCTION_SERVICE.group}/${FUNCTION_SERVICE.version}/namespaces/${namespace}/${FUNCTION_SERVICE.plural}`;
    const logger = memoryLogger();
    const gateway = await startGateway({
      functions: [],
      functionServices: namespace,
      kubeconfig: await kubeConfig(),
      namespaces: [namespace],
      logger,
    });
    t.after(() => gateway.stop());
    const statusWhen = (what: string, test: (status: Record<string, unknown>) => boolean) =>
      eventually(what, async () => {
        const status = (await client.get<KubernetesObject>(`${collection}/billing`)).status;
        return status && test(status) ? status : undefined;
      });

    // Nothing listens there yet: the status says so.
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    await client.request(collection, {
      method: 'POST',
      body: {
        apiVersion: `${FUNCTION_SERVICE.group}/${FUNCTION_SERVICE.version}`,
        kind: 'FunctionService',
        metadata: { name: 'billing' },
        spec: { url: nowhere, secretRef: { name: 'billing-secret' }, timeoutSeconds: 5 },
      },
    });
    const unreachable = await statusWhen(
      'the status Unreachable',
      (status) => status.phase === 'Unreachable',
    );
    assert.match(String(unreachable.lastError), /ECONNREFUSED/);

    const served = async (url: string) => {
      const { generation } = (
        await client.patch<KubernetesObject>(`${collection}/billing`, 'merge', { spec: { url } })
      ).metadata;
      return statusWhen(
        `the status Ready for ${url}`,
        (status) => status.phase === 'Ready' && status.observedGeneration === generation,
      );
    };
    const ready = await served(first);
    assert.deepEqual(
      { protocol: ready.protocol, handlers: ready.handlers, lastError: ready.lastError },
      { protocol: 'causeway.dev/v1', handlers: ['create_fn'], lastError: undefined },
    );
    assert.deepEqual(await statusOnceThere(await createKopfExample(namespace, 'one', {}), 'create_fn'), {
      version: 1,
    });

    // Another URL: once the status has seen it, the next object goes to the service there.
    await served(second);
    assert.deepEqual(await statusOnceThere(await createKopfExample(namespace, 'two', {}), 'create_fn'), {
      version: 2,
    });

    // Removed: nothing calls it. An object made meanwhile is handled by the service added back after.
    await client.request(`${collection}/billing`, { method: 'DELETE' });
    await eventually('the service no longer served', async () =>
      logger.lines.find((line) => line.includes('function service "billing" is no longer served')),
    );
    const three = await createKopfExample(namespace, 'three', {});
    await client.request(collection, {
      method: 'POST',
      body: {
        apiVersion: `${FUNCTION_SERVICE.group}/${FUNCTION_SERVICE.version}`,
        kind: 'FunctionService',
        metadata: { name: 'billing' },
        spec: { url: first, secretRef: { name: 'billing-secret' } },
      },
    });
    assert.deepEqual(await statusOnceThere(three, 'create_fn'), { version: 1 }, 'not by the removed service');
  });
});
