/**
 * Functions on Cloudflare Workers, end to end: the operator module bundled as a Workers bundler does
 * it and served by workerd (inside Miniflare, listening on this host as `wrangler dev` does), the
 * gateway calling it over HTTP, on the real control plane: create, update, and delete held by the
 * finalizer until the delete handler, run on workerd, is done. Trust as deployed: the gateway makes its
 * signing keys in a Secret and publishes their public halves in a ConfigMap, which the Worker gets as
 * its CAUSEWAY_JWKS binding; the gateway waits for the service meanwhile. The service also passes
 * `causeway conformance`, signed with the gateway's key.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { currentSigningKey } from '../../gateway/cli/secret.ts';
import { runConformance } from '../../gateway/conformance/checks.ts';
import { startGateway } from '../../gateway/gateway.ts';
import { isNotFound } from '../../gateway/kube/errors.ts';
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
  readPublishedKeys,
  statusOnceThere,
} from '../support/operator.ts';
import { freePort } from '../support/processes.ts';
import { startWorker } from '../support/workerd.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const MODULE = fileURLToPath(new URL('../fixtures/lifecycle-operator.ts', import.meta.url));

describe('a function service on workerd', () => {
  it('serves a whole lifecycle to the gateway over HTTP: create, update, delete with a finalizer', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const keys = { namespace, name: 'causeway-signing-keys' };
    // The Worker's port, known before it serves: the gateway is told where to wait for it.
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const logger = memoryLogger();
    const starting = startGateway({
      functions: [{ name: 'lifecycle', url, scope: KOPFEXAMPLES_SCOPE }],
      kubeconfig: await kubeConfig(),
      namespaces: [namespace],
      logger,
      settings: { signing: { keys } },
    });
    const published = await eventually('the published public keys', () => readPublishedKeys(keys));
    assert.doesNotMatch(published, /"d"/, 'no private key is published');
    const worker = await startWorker(MODULE, { bindings: { CAUSEWAY_JWKS: published }, sources: true, port });
    t.after(() => worker.close());
    const gateway = await starting;
    t.after(() => gateway.stop());
    assert.ok(logger.lines.some((line) => line.includes(`function service "lifecycle" at ${url}`)));
    const conformance = await runConformance({
      url,
      name: 'lifecycle',
      signing: { key: await currentSigningKey(client, keys) },
    });
    assert.deepEqual(
      conformance.filter((result) => result.failure),
      [],
      'it passes causeway conformance',
    );

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
