/**
 * Functions on Cloudflare Workers, end to end: the operator module bundled as a Workers bundler does
 * it and served by workerd (inside Miniflare, listening on this host as `wrangler dev` does), the
 * gateway calling it over HTTP, on the real control plane: create, update, and delete held by the
 * finalizer until the delete handler, run on workerd, is done. First, it passes `causeway conformance`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runConformance } from '../../gateway/conformance/checks.ts';
import { startGateway } from '../../gateway/gateway.ts';
import { isNotFound } from '../../gateway/kube/errors.ts';
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
import { startWorker } from '../support/workerd.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const MODULE = fileURLToPath(new URL('../fixtures/lifecycle-operator.ts', import.meta.url));

describe('a function service on workerd', () => {
  it('serves a whole lifecycle to the gateway over HTTP: create, update, delete with a finalizer', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const worker = await startWorker(MODULE, { bindings: { CAUSEWAY_SECRET: TEST_SECRET }, sources: true });
    t.after(() => worker.close());
    const conformance = await runConformance({
      url: worker.url,
      name: 'lifecycle',
      secret: new TextEncoder().encode(TEST_SECRET),
    });
    assert.deepEqual(
      conformance.filter((result) => result.failure),
      [],
      'it passes causeway conformance',
    );
    const logger = memoryLogger();
    const gateway = await startGateway({
      functions: [{ name: 'lifecycle', url: worker.url }],
      secret: new TextEncoder().encode(TEST_SECRET),
      kubeconfig: await kubeConfig(),
      namespaces: [namespace],
      logger,
    });
    t.after(() => gateway.stop());
    assert.ok(logger.lines.some((line) => line.includes(`function service "lifecycle" at ${worker.url}`)));

    const client = await kubeClient();
    const path = await createKopfExample(namespace, 'on-workers', { field: 'a' });
    const created = await eventually('status.create_fn', async () => {
      const object = await client.get<KubernetesObject>(path);
      return object.status?.create_fn === undefined ? undefined : object;
    });
    assert.deepEqual(created.status?.create_fn, { created: 'on-workers', runtime: 'Cloudflare-Workers' });
    assert.ok(created.metadata.finalizers?.includes('causeway.dev/finalizer'), 'held for the delete handler');

    await client.patch(path, 'merge', { spec: { field: 'b' } });
    assert.deepEqual(await statusOnceThere(path, 'update_fn'), { changed: ['spec.field'] });

    await client.request(path, { method: 'DELETE' });
    await eventually('the object gone', async () => {
      try {
        await client.get(path);
        return undefined;
      } catch (error) {
        if (isNotFound(error)) return true;
        throw error;
      }
    });
    // The gateway posts a handler's events after its call, so the Event may come after the object went.
    const deleted = await eventually("the delete handler's Event", async () => {
      const events = await client.get<{ items: Array<{ reason: string; message: string }> }>(
        `/api/v1/namespaces/${namespace}/events`,
        { fieldSelector: 'involvedObject.name=on-workers' },
      );
      const found = events.items.filter((event) => event.reason === 'Deleted').map((event) => event.message);
      return found.length > 0 ? found : undefined;
    });
    assert.deepEqual(deleted, ['delete_fn ran for on-workers on Cloudflare-Workers']);
  });
});
