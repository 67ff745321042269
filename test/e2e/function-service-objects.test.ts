/**
 * Function services as FunctionService objects: the gateway, told to look in a namespace, serves
 * each as it is added, follows a change of its URL, and stops calling it when it is removed, all
 * without a restart; the object's status says what the gateway found. The calls are signed with a
 * secret shared with that service alone, named by the object (`secretRef`).
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { operator, PermanentError } from '../../functions/index.ts';
import { serveFetch } from '../../gateway/cli/commands/serve/serve.ts';
import { startGateway } from '../../gateway/gateway.ts';
import { applyManifests } from '../../gateway/kube/apply.ts';
import {
  functionServiceDefinition,
  functionServicesPath,
} from '../../gateway/services/function-service-objects.ts';
import type { SettingsPatch } from '../../gateway/settings.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  applyFile,
  createFunctionService,
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

/** A gateway serving the FunctionService objects of a new namespace, and a way to wait for a status. */
async function environment(t: TestContext, settings?: SettingsPatch) {
  await applyFile(CRD);
  const client = await kubeClient();
  await applyManifests(client, [functionServiceDefinition()], { fieldManager: 'causeway-tests' });
  const namespace = await testNamespace(t);
  await client.request(`/api/v1/namespaces/${namespace}/secrets`, {
    method: 'POST',
    body: {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'billing-secret' },
      stringData: { secret: TEST_SECRET },
    },
  });
  const collection = functionServicesPath(namespace);
  const logger = memoryLogger();
  const gateway = await startGateway({
    functions: [],
    functionServices: namespace,
    kubeconfig: await kubeConfig(),
    namespaces: [namespace],
    logger,
    // The services run on this host: a gateway refuses loopback URLs unless told otherwise.
    settings: { ...settings, calls: { ...settings?.calls, allowLoopback: true } },
  });
  t.after(() => gateway.stop());
  const statusWhen = (what: string, test: (status: Record<string, unknown>) => boolean) =>
    eventually(what, async () => {
      const status = (await client.get<KubernetesObject>(`${collection}/billing`)).status;
      return status && test(status) ? status : undefined;
    });
  const create = (spec: Record<string, unknown>) =>
    createFunctionService(namespace, 'billing', {
      secretRef: { name: 'billing-secret' },
      scope: { resources: ['kopfexamples.kopf.dev'] },
      ...spec,
    });
  return { client, namespace, collection, logger, statusWhen, create };
}

describe('FunctionService objects', () => {
  it('are served as they are added, changed and removed, with no restart, their status saying what the gateway found', async (t) => {
    const { client, namespace, collection, logger, statusWhen, create } = await environment(t);
    const servers = await Promise.all(
      [billing(1), billing(2)].map((op) => serveFetch(op, { port: 0, host: '127.0.0.1' })),
    );
    t.after(() => Promise.all(servers.map((server) => server.close())));
    const [first, second] = servers.map((server) => server.url) as [string, string];

    // Nothing listens there yet: the status says so.
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    await create({ url: nowhere, timeoutSeconds: 5 });
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
    await create({ url: first });
    assert.deepEqual(await statusOnceThere(three, 'create_fn'), { version: 1 }, 'not by the removed service');
  });

  it('have their startup handlers run before their handlers are served, and are not served if those fail', async (t) => {
    const { client, namespace, collection, logger, create } = await environment(t);
    const op = operator({ name: 'billing', secret: TEST_SECRET });
    let startedWith: string | undefined;
    let failing = true;
    op.on.startup({ retries: 2 }, function connect({ retry }) {
      if (failing) throw new PermanentError('the ledger is unreachable');
      startedWith = `attempt ${retry}`;
    });
    op.on.create('kopfexamples', function create_fn() {
      return { startedWith };
    });
    const server = await serveFetch(op, { port: 0, host: '127.0.0.1' });
    t.after(() => server.close());

    await create({ url: server.url });
    await eventually('the refusal', async () =>
      logger.lines.find((line) =>
        line.includes('function service "billing" is not served: its startup handlers did not succeed'),
      ),
    );
    assert.ok(logger.lines.some((line) => line.includes('the ledger is unreachable')));

    // Served once its startup succeeds: the FunctionService removed and added back.
    failing = false;
    await client.request(`${collection}/billing`, { method: 'DELETE' });
    await eventually('the service no longer known', async () =>
      logger.lines.find((line) => line.includes('function service "billing" is no longer served')),
    );
    await create({ url: server.url });
    assert.deepEqual(await statusOnceThere(await createKopfExample(namespace, 'one', {}), 'create_fn'), {
      startedWith: 'attempt 0',
    });
  });

  it('show a service that goes down after it was Ready, and Ready again once it is back', async (t) => {
    const { namespace, statusWhen, create } = await environment(t, {
      calls: { breakerThreshold: 2, serviceRetryDelaysS: [0.2, 0.5, 1] },
    });
    const port = await freePort();
    let server = await serveFetch(billing(1), { port, host: '127.0.0.1' });
    t.after(() => server.close());
    await create({ url: server.url });
    await statusWhen('the status Ready', (status) => status.phase === 'Ready');

    await server.close();
    // Two calls find it unreachable: its circuit opens, and the status says why.
    for (const name of ['failing-0', 'failing-1']) await createKopfExample(namespace, name, {});
    const down = await statusWhen('the status Unreachable', (status) => status.phase === 'Unreachable');
    assert.match(String(down.lastError), /ECONNREFUSED/);
    assert.deepEqual(down.handlers, ['create_fn'], 'what it serves is still known');

    server = await serveFetch(billing(1), { port, host: '127.0.0.1' });
    const back = await statusWhen('the status Ready again', (status) => status.phase === 'Ready');
    assert.equal(back.lastError, undefined);
    assert.deepEqual(
      await statusOnceThere(`/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/failing-1`, 'create_fn'),
      { version: 1 },
    );
  });
});
