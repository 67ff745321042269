/**
 * Functions on Cloudflare Workers, end to end: the operator module built by `causeway build --target
 * workers`, its bundle served by workerd (inside Miniflare, listening on this host as `wrangler dev`
 * does) at the compatibility date of the wrangler.toml written with it, the gateway calling it over
 * HTTP, on the real control plane: create, update, and delete held by the finalizer until the delete
 * handler, run on workerd, is done. Trust as deployed: the gateway makes its signing keys in a Secret
 * and publishes their public halves in a ConfigMap, which the Worker fetches from the URL its
 * wrangler.toml's [vars] give it (`--jwks-url`); the gateway waits for the service meanwhile. The service also passes `causeway conformance`, signed
 * with the gateway's key.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../../gateway/gateway.ts';
import { isNotFound } from '../../gateway/kube/errors.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testCluster, testNamespace } from '../support/cluster.ts';
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
import { causeway, freePort } from '../support/processes.ts';
import { serveWorker } from '../support/workerd.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const MODULE = fileURLToPath(new URL('../fixtures/lifecycle-operator.ts', import.meta.url));

describe('a function service on workerd', () => {
  it('serves a whole lifecycle to the gateway over HTTP: create, update, delete with a finalizer', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const keys = { namespace, name: 'causeway-signing-keys' };
    // Where the Worker fetches the gateway's public keys: their ConfigMap, served as a JWKS URL is.
    const keysServer = createServer((_request, response) => {
      readPublishedKeys(keys).then(
        (text) => response.writeHead(text ? 200 : 404, { 'content-type': 'application/json' }).end(text),
        () => response.writeHead(500).end(),
      );
    });
    await new Promise<void>((listening) => keysServer.listen(0, '127.0.0.1', listening));
    t.after(() => keysServer.close());
    const jwksUrl = `http://127.0.0.1:${(keysServer.address() as AddressInfo).port}/jwks.json`;

    const out = await mkdtemp(join(tmpdir(), 'causeway-workers-build-'));
    t.after(() => rm(out, { recursive: true, force: true }));
    const build = causeway(
      ['build', '--target', 'workers', MODULE, '--out', out, '--jwks-url', jwksUrl],
      process.env,
    );
    assert.equal(await build.exited(), 0, build.output());
    const wranglerToml = await readFile(join(out, 'wrangler.toml'), 'utf8');
    assert.match(wranglerToml, /^name = "lifecycle-operator"$/m, "named after the module's file");
    assert.match(wranglerToml, /^main = "worker\.mjs"$/m);
    const compatibilityDate = /^compatibility_date = "(\d{4}-\d{2}-\d{2})"$/m.exec(wranglerToml)?.[1];
    assert.ok(compatibilityDate, wranglerToml);
    // Its [vars], as wrangler gives them to the Worker: the keys URL and nothing else.
    const vars = wranglerToml.slice(wranglerToml.indexOf('[vars]'));
    const bindings = Object.fromEntries(
      [...vars.matchAll(/^([A-Z_]+) = "(.*)"$/gm)].map(([, name, value]) => [
        name as string,
        value as string,
      ]),
    );
    assert.deepEqual(bindings, { CAUSEWAY_JWKS_URL: jwksUrl });

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
    const worker = await serveWorker(await readFile(join(out, 'worker.mjs'), 'utf8'), {
      bindings,
      port,
      compatibilityDate,
    });
    t.after(() => worker.close());
    const gateway = await starting;
    t.after(() => gateway.stop());
    assert.ok(logger.lines.some((line) => line.includes(`function service "lifecycle" at ${url}`)));
    const conformance = causeway(
      ['conformance', url, '--name', 'lifecycle', '--signing-keys', `${namespace}/${keys.name}`],
      { ...process.env, KUBECONFIG: (await testCluster()).kubeconfigPath },
    );
    assert.equal(await conformance.exited(), 0, conformance.output());
    assert.match(conformance.output(), /^\d+ passed, 0 failed$/m, 'it passes causeway conformance');

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
