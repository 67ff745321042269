/**
 * A function service that goes down: after a few calls find it unreachable, the gateway stops
 * calling it. The objects that need it wait, without a retry loop and without a write, and are all
 * handled promptly once its health check answers again.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { operator } from '../../functions/index.ts';
import { serveFetch } from '../../gateway/cli/commands/serve/serve.ts';
import { startGateway } from '../../gateway/gateway.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  KOPFEXAMPLES_SCOPE,
  kubeClient,
  kubeConfig,
  memoryLogger,
  statusOnceThere,
  TEST_SECRET,
} from '../support/operator.ts';
import { freePort } from '../support/processes.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);

describe('a function service that goes down', () => {
  it('has its calls wait, with no retry loop and no write, and handles them all once it is back', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const op = operator({ name: 'outage', secret: TEST_SECRET });
    op.on.create('kopfexamples', function create_fn({ name }) {
      return { created: name };
    });
    const port = await freePort();
    let server = await serveFetch(op, { port, host: '127.0.0.1' });
    const logger = memoryLogger();
    const gateway = await startGateway({
      functions: [{ name: 'outage', url: server.url, scope: KOPFEXAMPLES_SCOPE }],
      secret: new TextEncoder().encode(TEST_SECRET),
      kubeconfig: await kubeConfig(),
      namespaces: [namespace],
      logger,
      settings: { calls: { breakerThreshold: 3, serviceRetryDelaysS: [0.2, 0.5, 1] } },
    });
    t.after(() => gateway.stop());
    t.after(() => server.close());
    const linesFor = (name: string, pattern: RegExp) =>
      logger.lines.filter((line) => line.includes(`[${namespace}/${name}]`) && pattern.test(line));
    const waiting = /waiting for a function service that is down/;

    assert.deepEqual(await statusOnceThere(await createKopfExample(namespace, 'before', {}), 'create_fn'), {
      created: 'before',
    });

    await server.close();
    // The first calls fail as any failure does (and are recorded), until the breaker opens.
    const failing = ['failing-0', 'failing-1', 'failing-2'];
    for (const name of failing) await createKopfExample(namespace, name, {});
    await eventually('the service taken as down', async () =>
      logger.lines.find((line) => /function service down: .* service=outage url=\S+ failures=3 /.test(line)),
    );
    // Objects created now wait: no call, no write.
    const parked = ['parked-0', 'parked-1', 'parked-2', 'parked-3'];
    const created = new Map<string, string>();
    for (const name of parked) {
      const path = await createKopfExample(namespace, name, {});
      created.set(name, (await client.get<KubernetesObject>(path)).metadata.resourceVersion as string);
    }
    for (const name of [...failing, ...parked]) {
      await eventually(`${name} waiting`, async () => linesFor(name, waiting)[0]);
    }
    for (const name of parked) {
      const now = await client.get<KubernetesObject>(
        `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/${name}`,
      );
      assert.equal(now.metadata.resourceVersion, created.get(name), `${name}: nothing written while down`);
      assert.equal(now.status, undefined);
    }

    server = await serveFetch(op, { port, host: '127.0.0.1' });
    const cameBack = Date.now();
    for (const name of [...failing, ...parked]) {
      const path = `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/${name}`;
      assert.deepEqual(await statusOnceThere(path, 'create_fn'), { created: name });
    }
    assert.ok(
      Date.now() - cameBack < 5000,
      `all handled within ${Date.now() - cameBack} ms of the service's return`,
    );
    assert.ok(
      logger.lines.some((line) =>
        /function service back: its calls resume service=outage url=\S+ downSeconds=\d+/.test(line),
      ),
    );
    for (const name of [...failing, ...parked]) {
      assert.equal(linesFor(name, waiting).length, 1, `${name} waited once, not in a loop`);
    }
  });
});
