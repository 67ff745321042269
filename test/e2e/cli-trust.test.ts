/**
 * How the `causeway` commands come to trust each other, run as a user runs them: a gateway signing
 * for one service with a secret of that service alone (--function-secret); a gateway with keys of its
 * own (--signing-keys), rotating them when and as its flags say, and a `causeway serve --jwks-file`
 * verifying with their public halves; `causeway conformance` signing with the gateway's key from its
 * Secret; and a gateway finding its services in FunctionService objects (--function-services).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { newKey, publicKeys, type StoredKey } from '../../gateway/dispatch/keys.ts';
import { applyManifests } from '../../gateway/kube/apply.ts';
import {
  functionServiceDefinition,
  functionServicesPath,
} from '../../gateway/services/function-service-objects.ts';
import { PRIVATE_KEYS_FILE, readStoredKeys } from '../../gateway/services/signing-keys.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import { type PublishedKeys, problems } from '../support/deploy.ts';
import {
  applyFile,
  createFunctionService,
  createKopfExample,
  eventually,
  kubeClient,
  readPublishedKeys,
  statusOnceThere,
} from '../support/operator.ts';
import { causeway, serveOnLoopback } from '../support/processes.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const EXAMPLE = 'examples/01-minimal/operator.ts';
const SCOPE = 'test/fixtures/kopfexample-scope.yaml';
const SECRET = 'a-secret-of-the-kopfexample-service-alone-0123456789';
const DAY_MS = 24 * 3600_000;

// Nothing to sign or verify with but what each command is given.
const { CAUSEWAY_SECRET: _unset, ...withoutSecret } = process.env;

/** A file in a directory of its own, removed after `t`: a mounted Secret or ConfigMap, as a pod sees it. */
function mountedCopy(t: TestContext, name: string, content: string): string {
  const directory = mkdtempSync(join(tmpdir(), 'causeway-cli-trust-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  const file = join(directory, name);
  writeFileSync(file, content);
  return file;
}

/** `causeway serve` of the minimal example on a free loopback port, stopped after `t`; with its URL. */
const serve = (t: TestContext, trust: string[]) => serveOnLoopback(t, EXAMPLE, trust, withoutSecret);

/** The gateway's Secret as a gateway that ran before left it, holding `keys`. */
async function storeSigningKeys(location: { namespace: string; name: string }, keys: StoredKey[]) {
  await (await kubeClient()).request(`/api/v1/namespaces/${location.namespace}/secrets`, {
    method: 'POST',
    body: {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: location.name },
      stringData: { [PRIVATE_KEYS_FILE]: JSON.stringify(keys) },
    },
  });
}

const handledAs = (name: string) => ({ message: `hello ${name}` });

describe('causeway gateway --function-secret', () => {
  it("signs a service's calls with the secret of that service alone", async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const secretFile = mountedCopy(t, 'secret', `${SECRET}\n`);
    const { url } = await serve(t, ['--secret-file', secretFile]);
    // No --secret-file and no $CAUSEWAY_SECRET: the service's own secret is all the gateway has.
    const gateway = causeway(
      [
        'gateway',
        '--standalone',
        '--functions',
        `kopfexample=${url}`,
        '--function-scope',
        `kopfexample=${SCOPE}`,
        '--function-secret',
        `kopfexample=${secretFile}`,
        '--namespace',
        namespace,
      ],
      withoutSecret,
    );
    t.after(() => gateway.stop());

    const path = await createKopfExample(namespace, 'own-secret');
    assert.deepEqual(await statusOnceThere(path, 'create_fn'), handledAs('own-secret'));
    assert.equal(await gateway.stop(), 0, 'the gateway exits cleanly on SIGTERM');
  });

  it('refuses, as a usage error, a secret for a service that no --functions gives', async (t) => {
    const secretFile = mountedCopy(t, 'secret', SECRET);
    const gateway = causeway(
      [
        'gateway',
        '--standalone',
        '--functions',
        'kopfexample=http://127.0.0.1:8080',
        '--function-secret',
        `billing=${secretFile}`,
      ],
      withoutSecret,
    );
    assert.equal(await gateway.exited(), 2);
    assert.equal(
      gateway.output(),
      'causeway gateway: --function-secret names "billing", which no --functions gives\n' +
        'Run `causeway gateway --help` for usage.\n',
    );
  });
});

describe('causeway gateway --signing-keys', () => {
  it('rotates its keys as --key-rotation-days and --key-propagation-seconds say: the new key is published, and signs only once that time is over', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const keys = { namespace, name: 'causeway-signing-keys' };
    // Two days old: past --key-rotation-days 1, far from the default 30 days.
    const old = newKey(Date.now() - 2 * DAY_MS);
    await storeSigningKeys(keys, [old]);
    // The service has known the old key for two days, and it alone.
    const jwksFile = mountedCopy(t, 'jwks.json', JSON.stringify(publicKeys([old])));
    const { service, url } = await serve(t, ['--jwks-file', jwksFile]);
    // Made before the gateway starts, so that it is called at once, well within the propagation.
    const beforeSwitch = await createKopfExample(namespace, 'before-the-new-key');

    const propagationSeconds = 15;
    const gateway = causeway(
      [
        'gateway',
        '--standalone',
        '--functions',
        `kopfexample=${url}`,
        '--function-scope',
        `kopfexample=${SCOPE}`,
        '--signing-keys',
        `${namespace}/${keys.name}`,
        '--key-rotation-days',
        '1',
        '--key-propagation-seconds',
        String(propagationSeconds),
        '--namespace',
        namespace,
      ],
      withoutSecret,
    );
    t.after(() => gateway.stop());

    const jwks = await eventually('a second key published', async () => {
      const text = await readPublishedKeys(keys);
      return text && (JSON.parse(text) as PublishedKeys).keys.length === 2 ? text : undefined;
    });
    const published = (JSON.parse(jwks) as PublishedKeys).keys;
    const [kept, added] = published.map((key) => key.kid) as [string, string];
    assert.equal(kept, old.kid, 'the old key stays published for the tokens it signs');
    assert.ok(
      published.every((key) => !('d' in key)),
      'no private key is published',
    );
    const stored = (await readStoredKeys(await kubeClient(), keys))?.value ?? [];
    assert.deepEqual(
      stored.map((key) => key.kid),
      [kept, added],
      'the new key is kept in the Secret',
    );

    // The service knows only the old key: the object is handled because the new one does not sign yet.
    await gateway.waitFor(new RegExp(`signing calls to function services with key ${old.kid}`));
    assert.deepEqual(await statusOnceThere(beforeSwitch, 'create_fn'), handledAs('before-the-new-key'));

    // kubelet's part: the mounted file follows the ConfigMap, which the service reads again.
    writeFileSync(jwksFile, jwks);
    const switched = await gateway.waitFor(
      new RegExp(`(\\S+) INFO +signing calls to function services with key ${added}`),
    );
    const waitedMs = Date.parse(switched[1] as string) - (stored[1] as StoredKey).created;
    assert.ok(
      waitedMs >= propagationSeconds * 1000 && waitedMs < 180_000,
      `the new key signs after its ${propagationSeconds} s of propagation, not the default 180 s (after ${waitedMs} ms)`,
    );
    const afterSwitch = await createKopfExample(namespace, 'after-the-new-key');
    assert.deepEqual(await statusOnceThere(afterSwitch, 'create_fn'), handledAs('after-the-new-key'));

    assert.equal(await gateway.stop(), 0, 'the gateway exits cleanly on SIGTERM');
    assert.deepEqual(problems(gateway.output()), [], 'no call was refused');
    assert.deepEqual(problems(service.output()), []);
  });

  it('refuses, as a usage error, --key-rotation-days 0, which would make a new key at every look', async () => {
    const gateway = causeway(
      [
        'gateway',
        '--standalone',
        '--functions',
        'kopfexample=http://127.0.0.1:8080',
        '--signing-keys',
        'default/causeway-signing-keys',
        '--key-rotation-days',
        '0',
        '--namespace',
        'default',
      ],
      withoutSecret,
    );
    assert.equal(await gateway.exited(), 2);
    assert.equal(
      gateway.output(),
      'causeway gateway: --key-rotation-days expects at least 1\nRun `causeway gateway --help` for usage.\n',
    );
  });
});

describe('causeway conformance --signing-keys', () => {
  it("passes a service that verifies with the gateway's public keys, signing with its key from the Secret", async (t) => {
    const namespace = await testNamespace(t);
    const key = newKey(Date.now());
    await storeSigningKeys({ namespace, name: 'causeway-signing-keys' }, [key]);
    const { url } = await serve(t, [
      '--jwks-file',
      mountedCopy(t, 'jwks.json', JSON.stringify(publicKeys([key]))),
    ]);

    const conformance = causeway(
      ['conformance', url, '--name', 'kopfexample', '--signing-keys', `${namespace}/causeway-signing-keys`],
      withoutSecret,
    );
    t.after(() => conformance.stop());
    assert.equal(await conformance.exited(), 0, conformance.output());
    const output = conformance.output();
    for (const check of [
      /^✔ health: unsigned GET answers 200/m,
      /^✔ manifest: signed GET answers the protocol manifest/m,
      /^✔ invoke: \S+ handler "create_fn"/m,
      /^✔ refuses a request signed with another secret or key with 401/m,
      /^✔ refuses a request signed with HS256 over the public key with 401/m,
    ]) {
      assert.match(output, check);
    }
    assert.doesNotMatch(output, /✘/);
    assert.match(output, /\n\d+ passed, 0 failed\n$/);
  });
});

describe('causeway gateway --function-services', () => {
  it('serves the function service a FunctionService object names, its status saying Ready with its handlers', async (t) => {
    await applyFile(CRD);
    const client = await kubeClient();
    await applyManifests(client, [functionServiceDefinition()], { fieldManager: 'causeway-tests' });
    const namespace = await testNamespace(t);
    const { url } = await serve(t, ['--secret-file', mountedCopy(t, 'secret', SECRET)]);
    await client.request(`/api/v1/namespaces/${namespace}/secrets`, {
      method: 'POST',
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'kopfexample-secret' },
        stringData: { secret: SECRET },
      },
    });
    const collection = functionServicesPath(namespace);
    await createFunctionService(namespace, 'kopfexample', {
      url,
      secretRef: { name: 'kopfexample-secret' },
      scope: { resources: ['kopfexamples.kopf.dev'] },
    });

    // No --functions: the FunctionService object is the only service the gateway knows of (on loopback here).
    const gateway = causeway(
      [
        'gateway',
        '--standalone',
        '--function-services',
        namespace,
        '--allow-loopback-functions',
        '--namespace',
        namespace,
      ],
      withoutSecret,
    );
    t.after(() => gateway.stop());
    const status = await eventually('the FunctionService Ready', async () => {
      const current = (await client.get<KubernetesObject>(`${collection}/kopfexample`)).status;
      return current?.phase === 'Ready' ? current : undefined;
    });
    assert.deepEqual(
      { protocol: status.protocol, handlers: status.handlers, lastError: status.lastError },
      { protocol: 'causeway.dev/v1', handlers: ['create_fn'], lastError: undefined },
    );
    const path = await createKopfExample(namespace, 'from-an-object');
    assert.deepEqual(await statusOnceThere(path, 'create_fn'), handledAs('from-an-object'));
    assert.equal(await gateway.stop(), 0, 'the gateway exits cleanly on SIGTERM');
  });
});
