/**
 * The gateway's signing keys rotate under load with no call refused. The gateway keeps its keys in a
 * Secret and publishes their public halves in a ConfigMap; the function service is `causeway serve
 * --jwks-file`, following a file that this test keeps a copy of the ConfigMap in, a second late, as
 * kubelet keeps a mounted ConfigMap. Objects are created all along: each is handled, and no call is
 * refused, before, during and after the new key takes over.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../../gateway/gateway.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  KOPFEXAMPLES_SCOPE,
  kubeConfig,
  memoryLogger,
  readPublishedKeys,
  statusOnceThere,
} from '../support/operator.ts';
import { causeway, freePort } from '../support/processes.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const MODULE = fileURLToPath(new URL('../fixtures/lifecycle-operator.ts', import.meta.url));
/** How late the service's copy of the public keys is, as kubelet's copy of a mounted ConfigMap is. */
const MOUNT_DELAY_MS = 1000;

describe("the gateway's signing keys", () => {
  it('rotate under load: the new key signs only once the service knows it, and no call is refused', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const keys = { namespace, name: 'causeway-signing-keys' };
    const readPublished = () => readPublishedKeys(keys);

    const port = await freePort();
    const logger = memoryLogger();
    const starting = startGateway({
      functions: [{ name: 'lifecycle', url: `http://127.0.0.1:${port}`, scope: KOPFEXAMPLES_SCOPE }],
      kubeconfig: await kubeConfig(),
      namespaces: [namespace],
      logger,
      // A new key 8 s after the first; it waits 7 s, published, before it signs: the service polls its
      // file every 5 s, and the file is a second behind the ConfigMap.
      settings: { signing: { keys, rotateAfterMs: 8000, propagationMs: 7000, refreshMs: 250 } },
    });

    // kubelet's part: the ConfigMap's content, copied whole into the mounted file, a second late.
    const file = join(mkdtempSync(join(tmpdir(), 'causeway-keys-')), 'jwks.json');
    const mount = (text: string) => {
      writeFileSync(`${file}.new`, text);
      renameSync(`${file}.new`, file);
    };
    mount(await eventually('the published public keys', readPublished));
    let mounted = await readPublished();
    const copying = setInterval(async () => {
      const text = await readPublished().catch(() => undefined);
      if (!text || text === mounted) return;
      mounted = text;
      setTimeout(() => mount(text), MOUNT_DELAY_MS);
    }, 200);
    t.after(() => clearInterval(copying));

    const service = causeway(
      ['serve', MODULE, '--port', String(port), '--host', '127.0.0.1', '--jwks-file', file],
      {
        ...process.env,
        CAUSEWAY_SECRET: '',
      },
    );
    t.after(() => service.stop());
    const gateway = await starting;
    t.after(() => gateway.stop());

    const signingKeys = () =>
      logger.lines.flatMap(
        (line) => /signing calls to function services with key (\S+)/.exec(line)?.[1] ?? [],
      );
    const [first] = signingKeys();
    assert.ok(first, 'the gateway made a key and signs with it');

    const names: string[] = [];
    const paths: string[] = [];
    const creating = setInterval(() => {
      const name = `rotation-${names.length}`;
      names.push(name);
      createKopfExample(namespace, name, {}).then((path) => paths.push(path));
    }, 300);
    t.after(() => clearInterval(creating));
    const second = await eventually('the next key signing', async () => signingKeys()[1], 30_000);
    const published = JSON.parse((await readPublished()) ?? '{}') as { keys: Array<Record<string, unknown>> };
    assert.deepEqual(
      published.keys.map((key) => key.kid),
      [first, second],
      'the old key stays published for the tokens it signed',
    );
    assert.ok(
      published.keys.every((key) => !('d' in key)),
      'no private key is published',
    );
    // Calls signed by the new key, then stop creating.
    const after = paths.length;
    await eventually('objects created after the switch', async () =>
      paths.length >= after + 3 ? true : undefined,
    );
    clearInterval(creating);
    await eventually('every create sent', async () => (paths.length === names.length ? true : undefined));

    for (const [index, path] of paths.entries()) {
      assert.ok(await statusOnceThere(path, 'create_fn'), `object ${index} handled`);
    }
    const refusals = logger.lines.filter((line) => / 401 /.test(line));
    assert.deepEqual(refusals, [], 'no call was refused');
    assert.ok(names.length > 20, `objects were created all along (${names.length})`);
  });
});
