/**
 * Nothing in the clear between the gateway and its function services (issue 21, point 5): a service
 * given a certificate Secret is issued a certificate by the gateway's own CA and trusted with that
 * CA's certificates only, for its host; a certificate of another CA (one the gateway trusts for other
 * services included) or another service's is refused before any object is sent; a renewed certificate
 * is served without a restart; and plain HTTP beyond this host needs --allow-plain-http, with a
 * warning that names the service.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { connect } from 'node:tls';
import { operator } from '../../../functions/index.ts';
import { type RunningServer, serveFetch } from '../../../gateway/cli/commands/serve/serve.ts';
import type { FunctionEndpoint } from '../../../gateway/dispatch/services.ts';
import { type Gateway, startGateway } from '../../../gateway/gateway.ts';
import type { SettingsPatch } from '../../../gateway/settings.ts';
import { issueServingCertificate, newAuthority } from '../../../webhooks/certificates.ts';
import { testNamespace } from '../../support/cluster.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  kubeClient,
  kubeConfig,
  memoryLogger,
  statusOnceThere,
  TEST_SECRET,
} from '../../support/operator.ts';
import { freePort } from '../../support/processes.ts';

const CRD = new URL('../../../examples/01-minimal/crd.yaml', import.meta.url);
const CA_SECRET = 'causeway-function-ca';
const SERVICE_SECRET = 'kopfexample-tls';
const SCOPE = { resources: ['kopfexamples.kopf.dev'] };
const DAY_MS = 86_400_000;

/** The operator of examples/01-minimal, counting the requests it is sent. */
function kopfexample() {
  const op = operator({ name: 'kopfexample', secret: TEST_SECRET });
  op.on.create('kopfexamples', async function create_fn({ name }) {
    return { message: `hello ${name}` };
  });
  const served = { requests: 0 };
  return Object.assign(served, {
    name: 'kopfexample',
    fetch: (request: Request) => {
      served.requests++;
      return op.fetch(request);
    },
  });
}

/** A gateway starting for one service, which it waits for; it is stopped after `t`. */
function startFor(
  t: TestContext,
  namespace: string,
  endpoint: Omit<FunctionEndpoint, 'name'>,
  calls: SettingsPatch['calls'] = {},
) {
  const logger = memoryLogger();
  const starting = kubeConfig().then((kubeconfig) =>
    startGateway({
      functions: [{ name: 'kopfexample', scope: SCOPE, ...endpoint }],
      secret: new TextEncoder().encode(TEST_SECRET),
      kubeconfig,
      logger,
      namespaces: [namespace],
      settings: { calls: { certificateAuthority: { namespace, name: CA_SECRET }, ...calls } },
    }),
  );
  t.after(async () => (await starting.catch(() => undefined))?.stop());
  return { starting, logger };
}

async function readSecret(namespace: string, name: string): Promise<Record<string, string> | undefined> {
  const client = await kubeClient();
  const read = await client
    .get<{ data: Record<string, string> }>(`/api/v1/namespaces/${namespace}/secrets/${name}`)
    .catch(() => undefined);
  if (!read) return undefined;
  return Object.fromEntries(
    Object.entries(read.data).map(([key, value]) => [key, Buffer.from(value, 'base64').toString()]),
  );
}

/** The kubelet's part: the Secret's certificate and key as files, replaced at once (a rename), as a mount is. */
async function mount(namespace: string, dir: string, unlike?: string) {
  const data = await eventually(`Secret ${namespace}/${SERVICE_SECRET}`, async () => {
    const read = await readSecret(namespace, SERVICE_SECRET);
    return read?.['tls.crt'] && read['tls.crt'] !== unlike ? read : undefined;
  });
  const files = { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
  for (const [file, key] of [
    [files.keyFile, 'tls.key'],
    [files.certFile, 'tls.crt'],
  ] as const) {
    await writeFile(`${file}.new`, data[key] as string);
    await rename(`${file}.new`, file);
  }
  return { ...files, cert: data['tls.crt'] as string, ca: data['ca.crt'] as string };
}

/** The certificate a TLS client is served at `port` now, verified against `ca`. */
function servedCertificate(port: number, ca: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca }, () => {
      resolve(socket.getPeerX509Certificate() as X509Certificate);
      socket.end();
    });
    socket.once('error', reject);
  });
}

async function scratch(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'causeway-function-tls-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function closeAfter(t: TestContext, server: RunningServer): RunningServer {
  t.after(() => server.close());
  return server;
}

describe('function services over TLS the gateway issues and pins', () => {
  it('issues the service a certificate of its own CA into its Secret, calls it over TLS, and the service serves a renewed one without a restart', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const dir = await scratch(t);
    const port = await freePort();
    const { starting, logger } = startFor(
      t,
      namespace,
      {
        url: `https://127.0.0.1:${port}`,
        certificate: { namespace, name: SERVICE_SECRET },
      },
      { certificateCheckMs: 100 },
    );
    const mounted = await mount(namespace, dir);
    const service = kopfexample();
    closeAfter(
      t,
      await serveFetch(service, {
        port,
        host: '127.0.0.1',
        tls: { certFile: mounted.certFile, keyFile: mounted.keyFile, checkIntervalMs: 50 },
      }),
    );
    const gateway: Gateway = await starting;
    await gateway.synced;
    const first = await createKopfExample(namespace, 'over-tls');
    assert.deepEqual(await statusOnceThere(first, 'create_fn'), { message: 'hello over-tls' });

    // The certificate names the URL's host and is signed by the CA in the gateway's own Secret, whose
    // key stays there: the service's Secret holds its certificate, its key and the CA's certificate.
    const authority = (await readSecret(namespace, CA_SECRET)) ?? {};
    assert.deepEqual(Object.keys(authority).sort(), ['tls.crt', 'tls.key']);
    assert.equal(mounted.ca, authority['tls.crt']);
    assert.deepEqual(Object.keys((await readSecret(namespace, SERVICE_SECRET)) ?? {}).sort(), [
      'ca.crt',
      'tls.crt',
      'tls.key',
    ]);
    const issued = new X509Certificate(mounted.cert);
    assert.equal(issued.subjectAltName, 'IP Address:127.0.0.1');
    assert.ok(issued.verify(new X509Certificate(mounted.ca).publicKey));
    const lines = () => logger.lines.join('\n');
    assert.match(
      lines(),
      new RegExp(
        `issued a certificate for 127\\.0\\.0\\.1 into Secret ${namespace}/${SERVICE_SECRET} \\(there was none\\)`,
      ),
    );

    // Near its end (issued 61 of its 90 days ago), it is renewed at the gateway's next look; the
    // service, given the new files as the kubelet would, serves it from its next connection on, in the
    // same process. Gone from its Secret, it is issued anew likewise.
    const served = logger.lines.length;
    const client = await kubeClient();
    const secretPath = `/api/v1/namespaces/${namespace}/secrets/${SERVICE_SECRET}`;
    const aged = await issueServingCertificate(
      { cert: authority['tls.crt'] as string, key: authority['tls.key'] as string },
      ['127.0.0.1'],
      new Date(Date.now() - 61 * DAY_MS),
    );
    const base64 = (text: string) => Buffer.from(text).toString('base64');
    await client.patch(secretPath, 'merge', {
      data: { 'tls.crt': base64(aged.cert), 'tls.key': base64(aged.key) },
    });
    let previous = aged.cert;
    for (const [step, reason] of [
      ['aged', /\(it ends on \S+\)/],
      ['deleted', /\(there was none\)/],
    ] as const) {
      if (step === 'deleted') await client.request(secretPath, { method: 'DELETE' });
      const renewed = await mount(namespace, dir, previous);
      const fingerprint = new X509Certificate(renewed.cert).fingerprint256;
      await eventually(`the certificate renewed once ${step} served`, async () =>
        (await servedCertificate(port, renewed.ca)).fingerprint256 === fingerprint ? true : undefined,
      );
      const object = await createKopfExample(namespace, `after-${step}`);
      assert.deepEqual(await statusOnceThere(object, 'create_fn'), { message: `hello after-${step}` });
      previous = renewed.cert;
      assert.match(
        logger.lines.filter((line) => line.includes('issued a certificate')).at(-1) ?? '',
        new RegExp(
          `issued a certificate for 127\\.0\\.0\\.1 into Secret ${namespace}/${SERVICE_SECRET} ${reason.source}`,
        ),
      );
    }
    // No call failed meanwhile: the certificate it had stayed valid until the new one was served.
    assert.deepEqual(
      logger.lines.slice(served).filter((line) => /WARNING|ERROR/.test(line)),
      [],
    );
  });

  it("refuses a service presenting another CA's certificate (one the gateway trusts for other services too) or another service's, before sending it anything", async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const dir = await scratch(t);
    const port = await freePort();
    const url = `https://127.0.0.1:${port}`;
    // The gateway trusts `other` for services without a pin of their own (--functions-ca).
    const other = await newAuthority('another CA');
    const { starting, logger } = startFor(
      t,
      namespace,
      { url, certificate: { namespace, name: SERVICE_SECRET } },
      { ca: other.cert },
    );
    const mounted = await mount(namespace, dir);
    // Tried before the impostors listen (refused connections): the lines about their certificates.
    const refusals = () =>
      logger.lines.filter(
        (line) => line.includes(`function service ${url} is not reachable yet`) && /certificate/.test(line),
      );

    // Another CA's certificate, for the right host: refused.
    const impostor = kopfexample();
    const foreignFiles = { certFile: join(dir, 'foreign.crt'), keyFile: join(dir, 'foreign.key') };
    const foreign = await issueServingCertificate(other, ['127.0.0.1']);
    await writeFile(foreignFiles.certFile, foreign.cert);
    await writeFile(foreignFiles.keyFile, foreign.key);
    let server = await serveFetch(impostor, { port, host: '127.0.0.1', tls: foreignFiles });
    const refused = await eventually('a refusal', async () => refusals()[0]);
    assert.match(
      refused,
      /unable to verify the first certificate: its certificate is not one this gateway trusts for it .*a service given a certificate Secret is trusted with the gateway's own only/,
    );
    await server.close();

    // A certificate of the gateway's own CA, but another service's (another host): refused too.
    const authority = (await readSecret(namespace, CA_SECRET)) ?? {};
    const otherService = await issueServingCertificate(
      { cert: authority['tls.crt'] as string, key: authority['tls.key'] as string },
      ['localhost'],
    );
    await writeFile(foreignFiles.certFile, otherService.cert);
    await writeFile(foreignFiles.keyFile, otherService.key);
    const before = refusals().length;
    server = await serveFetch(impostor, { port, host: '127.0.0.1', tls: foreignFiles });
    const mismatch = await eventually('another refusal', async () => refusals()[before]);
    assert.match(
      mismatch,
      /Hostname\/IP does not match certificate's altnames: IP: 127\.0\.0\.1 is not in the cert's list/,
    );
    await server.close();
    assert.equal(impostor.requests, 0, 'nothing reached the impostors: not even the health check');

    // With its own certificate, the service is served.
    const service = kopfexample();
    closeAfter(t, await serveFetch(service, { port, host: '127.0.0.1', tls: mounted }));
    const gateway = await starting;
    await gateway.synced;
    const path = await createKopfExample(namespace, 'its-own');
    assert.deepEqual(await statusOnceThere(path, 'create_fn'), { message: 'hello its-own' });
  });

  it('does not replace a Secret of that name it did not make, and says so, until it is gone', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const dir = await scratch(t);
    const port = await freePort();
    const client = await kubeClient();
    const secretPath = `/api/v1/namespaces/${namespace}/secrets/${SERVICE_SECRET}`;
    const theirs = { password: Buffer.from('not a certificate').toString('base64') };
    await client.request(`/api/v1/namespaces/${namespace}/secrets`, {
      method: 'POST',
      body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: SERVICE_SECRET }, data: theirs },
    });
    const { starting, logger } = startFor(t, namespace, {
      url: `https://127.0.0.1:${port}`,
      certificate: { namespace, name: SERVICE_SECRET },
    });
    const refused = await eventually('a refusal', async () =>
      logger.lines.find((line) => line.includes('is not a certificate this gateway made')),
    );
    assert.match(
      refused,
      new RegExp(
        `WARNING.*Secret ${namespace}/${SERVICE_SECRET} exists and is not a certificate this gateway made .*name another Secret, or delete this one`,
      ),
    );
    assert.deepEqual((await client.get<{ data: Record<string, string> }>(secretPath)).data, theirs);

    // Deleted, it is the gateway's to make: the service is served with the certificate it issues.
    await client.request(secretPath, { method: 'DELETE' });
    const mounted = await mount(namespace, dir);
    closeAfter(t, await serveFetch(kopfexample(), { port, host: '127.0.0.1', tls: mounted }));
    const gateway = await starting;
    await gateway.synced;
    const path = await createKopfExample(namespace, 'after-theirs');
    assert.deepEqual(await statusOnceThere(path, 'create_fn'), { message: 'hello after-theirs' });
  });

  it('does not start with a CA Secret that holds no CA, and says why', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    // A serving certificate where the CA should be: certificates it signed would be refused anyway.
    const serving = await issueServingCertificate(await newAuthority('another CA'), ['127.0.0.1']);
    await (await kubeClient()).request(`/api/v1/namespaces/${namespace}/secrets`, {
      method: 'POST',
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'kubernetes.io/tls',
        metadata: { name: CA_SECRET },
        data: {
          'tls.crt': Buffer.from(serving.cert).toString('base64'),
          'tls.key': Buffer.from(serving.key).toString('base64'),
        },
      },
    });
    const { starting } = startFor(t, namespace, {
      url: `https://127.0.0.1:${await freePort()}`,
      certificate: { namespace, name: SERVICE_SECRET },
    });
    await assert.rejects(
      starting,
      new RegExp(
        `Secret ${namespace}/${CA_SECRET} holds a certificate for CN=127\\.0\\.0\\.1, not a CA: it is no CA to issue the function services' certificates with`,
      ),
    );
    assert.equal(await readSecret(namespace, SERVICE_SECRET), undefined, 'no certificate issued');
  });

  it('calls a service over plain HTTP beyond this host only with --allow-plain-http, and then warns, naming it', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const address = Object.values(networkInterfaces())
      .flat()
      .find((each) => each?.family === 'IPv4' && !each.internal)?.address;
    assert.ok(address, 'this test needs a network interface beyond loopback');
    const server = closeAfter(t, await serveFetch(kopfexample(), { port: 0, host: address }));
    const url = server.url;
    assert.match(url, /^http:\/\//);

    // Refused by default, before any call.
    const refused = startFor(t, namespace, { url });
    await assert.rejects(
      refused.starting,
      new RegExp(`${url}: function services are called over HTTPS, or plain HTTP on this host`),
    );

    const { starting, logger } = startFor(t, namespace, { url }, { plainHttp: true });
    const gateway = await starting;
    await gateway.synced;
    const path = await createKopfExample(namespace, 'in-the-clear');
    assert.deepEqual(await statusOnceThere(path, 'create_fn'), { message: 'hello in-the-clear' });
    const warnings = logger.lines.filter((line) => /called over plain HTTP/.test(line));
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(
      warnings[0] ?? '',
      new RegExp(
        `WARNING.*function service "kopfexample" is called over plain HTTP at ${url} \\(--allow-plain-http\\)`,
      ),
    );
  });
});
