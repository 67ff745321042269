/**
 * FunctionService URLs (issue 21, point 6), on the real control plane: whoever may edit a
 * FunctionService tries to make the gateway call what they cannot reach themselves (the gateway's own
 * host, the cloud metadata service) or a path of their choosing (userinfo, `?`, `#`), and to read what
 * it answered in the status. A gateway not told to allow local hosts refuses each, its status saying
 * why, while a service given to it otherwise is served; and what a service answered never reaches
 * `status.lastError`, only the gateway's words do.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { describe, it, type TestContext } from 'node:test';
import { operator } from '../../../functions/index.ts';
import { serveFetch } from '../../../gateway/cli/commands/serve/serve.ts';
import { startGateway } from '../../../gateway/gateway.ts';
import { applyManifests } from '../../../gateway/kube/apply.ts';
import { devSessionLease } from '../../../gateway/services/dev-sessions.ts';
import {
  functionServiceDefinition,
  functionServicesPath,
} from '../../../gateway/services/function-service-objects.ts';
import type { SettingsPatch } from '../../../gateway/settings.ts';
import type { KubernetesObject } from '../../../protocol/index.ts';
import { testNamespace } from '../../support/cluster.ts';
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
} from '../../support/operator.ts';

const CRD = new URL('../../../examples/01-minimal/crd.yaml', import.meta.url);
const SCOPE = { resources: ['kopfexamples.kopf.dev'] };

/** A service on this host that answers every request as `answer` does, counting them. */
async function rawService(t: TestContext, answer: (response: import('node:http').ServerResponse) => void) {
  const counted = { requests: 0 };
  const server: Server = createServer((_request, response) => {
    counted.requests++;
    answer(response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  const { port } = server.address() as { port: number };
  return Object.assign(counted, { port });
}

/**
 * A gateway serving the FunctionServices of a new namespace, and an "other" service given to it
 * with --functions, whose objects it handles meanwhile.
 */
async function environment(t: TestContext, settings: SettingsPatch = {}) {
  await applyFile(CRD);
  const client = await kubeClient();
  await applyManifests(client, [functionServiceDefinition()], { fieldManager: 'causeway-tests' });
  const namespace = await testNamespace(t);
  const other = operator({ name: 'other', secret: TEST_SECRET });
  other.on.create('kopfexamples', function create_fn({ name }) {
    return { handled: name };
  });
  const otherServer = await serveFetch(other, { port: 0, host: '127.0.0.1' });
  t.after(() => otherServer.close());
  const logger = memoryLogger();
  const gateway = await startGateway({
    functions: [{ name: 'other', url: otherServer.url, scope: SCOPE }],
    secret: new TextEncoder().encode(TEST_SECRET),
    functionServices: namespace,
    devSessions: namespace,
    kubeconfig: await kubeConfig(),
    namespaces: [namespace],
    logger,
    settings,
  });
  t.after(() => gateway.stop());
  const collection = functionServicesPath(namespace);
  const create = (name: string, url: string, serviceName?: string) =>
    createFunctionService(namespace, name, { url, scope: SCOPE, ...(serviceName ? { serviceName } : {}) });
  const statusWhen = (name: string, test: (status: Record<string, unknown>) => boolean) =>
    eventually(`the status of ${name}`, async () => {
      const { status } = await client.get<KubernetesObject>(`${collection}/${name}`);
      return status && test(status) ? status : undefined;
    });
  return { client, namespace, collection, logger, create, statusWhen };
}

describe('FunctionService URLs, from a hostile FunctionService', () => {
  it('are refused with userinfo, a query, a fragment, or a loopback or link-local host, the status saying why; other services are served meanwhile', async (t) => {
    const { namespace, logger, create, statusWhen } = await environment(t);
    // A real service of that name on this host: called, it would answer and be served.
    const op = operator({ name: 'billing', secret: TEST_SECRET });
    op.on.create('kopfexamples', function create_fn() {
      return { by: 'billing' };
    });
    let requests = 0;
    const local = await serveFetch(
      {
        fetch: (request: Request) => {
          requests++;
          return op.fetch(request);
        },
      },
      { port: 0, host: '127.0.0.1' },
    );
    t.after(() => local.close());
    const { port } = new URL(local.url);

    const attempts: Array<[name: string, url: string, why: RegExp]> = [
      [
        'loopback',
        `http://127.0.0.1:${port}`,
        /127\.0\.0\.1 is a loopback, link-local, unspecified or cloud metadata address/,
      ],
      ['localhost', `http://localhost:${port}`, /localhost is a loopback host/],
      ['ipv6-loopback', `http://[::1]:${port}`, /\[::1\] is a loopback/],
      ['decimal-loopback', `http://2130706433:${port}`, /127\.0\.0\.1 is a loopback/],
      ['metadata', 'http://169.254.169.254/latest/meta-data', /169\.254\.169\.254 is a loopback, link-local/],
      ['userinfo', 'http://mallory:hunter2@billing.invalid:8080', /userinfo/],
      ['query', 'http://billing.invalid:8080/?path=', /a query/],
      ['fragment', 'http://billing.invalid:8080/#', /a fragment/],
    ];
    for (const [name, url] of attempts) await create(name, url);
    for (const [name, url, why] of attempts) {
      const status = await statusWhen(name, (status) => status.phase === 'Refused');
      assert.match(String(status.lastError), why, name);
      const shown = url.replace('mallory:hunter2@', '…@');
      assert.ok(String(status.lastError).startsWith(`url ${shown} is refused: `), String(status.lastError));
      assert.equal(status.handlers, undefined, `${name}: nothing of it is served`);
      assert.ok(
        logger.lines.some((line) =>
          line.includes(`FunctionService ${namespace}/${name} is not served: url ${shown} is refused`),
        ),
        `${name}: the log says so`,
      );
    }
    assert.match(
      String((await statusWhen('loopback', () => true)).lastError),
      /--allow-loopback-functions/,
      'the status says how a gateway on a developer machine allows it',
    );
    assert.equal(requests, 0, 'the service on the gateway host was never called');
    assert.ok(!logger.lines.some((line) => line.includes('hunter2')), 'no password in the log');

    const path = await createKopfExample(namespace, 'meanwhile');
    assert.deepEqual(await statusOnceThere(path, 'create_fn'), { handled: 'meanwhile' });
  });

  it('on a loopback host are served by a gateway told to allow them', async (t) => {
    const { create, statusWhen } = await environment(t, { calls: { allowLoopback: true } });
    const op = operator({ name: 'billing', secret: TEST_SECRET });
    op.on.create('kopfexamples', function create_fn() {
      return { by: 'billing' };
    });
    const local = await serveFetch(op, { port: 0, host: '127.0.0.1' });
    t.after(() => local.close());
    await create('billing', local.url);
    const status = await statusWhen('billing', (status) => status.phase === 'Ready');
    assert.deepEqual(status.handlers, ['create_fn']);
  });

  it('no longer serve a FunctionService whose url becomes refused, and serve the next one naming its service once it is gone', async (t) => {
    const { client, namespace, collection, create, statusWhen } = await environment(t, {
      calls: { allowLoopback: true },
    });
    const op = operator({ name: 'billing', secret: TEST_SECRET });
    op.on.create('kopfexamples', function bill() {
      return { by: 'billing' };
    });
    let calls = 0;
    const billing = await serveFetch(
      {
        fetch: (request: Request) => {
          if (new URL(request.url).pathname.endsWith('/invoke')) calls++;
          return op.fetch(request);
        },
      },
      { port: 0, host: '127.0.0.1' },
    );
    t.after(() => billing.close());
    await create('a-billing', billing.url, 'billing');
    await statusWhen('a-billing', (status) => status.phase === 'Ready');
    assert.deepEqual(await statusOnceThere(await createKopfExample(namespace, 'before'), 'bill'), {
      by: 'billing',
    });

    // Its url changed to pick another path: refused, and no longer called.
    await client.patch(`${collection}/a-billing`, 'merge', { spec: { url: `${billing.url}/?path=` } });
    await statusWhen('a-billing', (status) => status.phase === 'Refused');
    const calledBefore = calls;
    const after = await createKopfExample(namespace, 'after');
    assert.deepEqual(await statusOnceThere(after, 'create_fn'), { handled: 'after' }, 'the other service is');
    assert.equal((await client.get<KubernetesObject>(after)).status?.bill, undefined);
    assert.equal(calls, calledBefore);

    // A newer object naming the service waits for the older, refused as it is, to go.
    await create('b-billing', billing.url, 'billing');
    const waiting = await statusWhen('b-billing', (status) => status.phase === 'Refused');
    assert.match(String(waiting.lastError), /already that of FunctionService \S+\/a-billing, which is older/);
    await client.request(`${collection}/a-billing`, { method: 'DELETE' });
    await statusWhen('b-billing', (status) => status.phase === 'Ready');
    assert.deepEqual(await statusOnceThere(await createKopfExample(namespace, 'last'), 'bill'), {
      by: 'billing',
    });
  });

  it('cannot take the name of a service the gateway was given with --functions, nor its dev sessions', async (t) => {
    const { client, namespace, collection, logger, create, statusWhen } = await environment(t, {
      calls: { allowLoopback: true },
    });
    // Answers as "other" does, signed calls and all: served in its place, it would get its objects.
    const impostor = operator({ name: 'other', secret: TEST_SECRET });
    impostor.on.create('kopfexamples', function create_fn() {
      return { handled: 'by the impostor' };
    });
    let calls = 0;
    const server = await serveFetch(
      {
        fetch: (request: Request) => {
          if (new URL(request.url).pathname.endsWith('/invoke')) calls++;
          return impostor.fetch(request);
        },
      },
      { port: 0, host: '127.0.0.1' },
    );
    t.after(() => server.close());
    await create('takeover', server.url, 'other');
    await client.patch(`${collection}/takeover`, 'merge', {
      spec: { devSessions: { allowed: true, urls: ['http://*'] } },
    });
    const refused = await statusWhen('takeover', (status) => status.phase === 'Refused');
    assert.equal(
      refused.lastError,
      'serviceName "other" is that of a function service the gateway was given otherwise (--functions)',
    );
    // Its spec.devSessions allows nothing for "other", which allows no dev sessions.
    await client.request(`/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`, {
      method: 'POST',
      body: devSessionLease(
        { service: 'other', url: server.url, revision: '1', holder: 'mallory@laptop', durationSeconds: 60 },
        'causeway.dev',
        new Date(),
      ),
    });
    await eventually('the session ignored', async () =>
      logger.lines.find((line) =>
        line.includes('for "other" is ignored: "other" does not allow dev sessions'),
      ),
    );
    assert.deepEqual(await statusOnceThere(await createKopfExample(namespace, 'meanwhile'), 'create_fn'), {
      handled: 'meanwhile',
    });

    // Gone, it takes nothing with it: the gateway has seen it go once it has seen the next object.
    await client.request(`${collection}/takeover`, { method: 'DELETE' });
    await create('marker', 'http://billing.invalid/?after-the-delete');
    await statusWhen('marker', (status) => status.phase === 'Refused');
    assert.deepEqual(await statusOnceThere(await createKopfExample(namespace, 'after'), 'create_fn'), {
      handled: 'after',
    });
    assert.equal(calls, 0, 'the impostor was never called');
  });

  it('put in status.lastError what the gateway says, never what the service answered', async (t) => {
    const { create, statusWhen, logger } = await environment(t, { calls: { allowLoopback: true } });
    const secret = 'AKIA-internal-credentials-only-this-host-serves';
    const html = await rawService(t, (response) => {
      response.writeHead(500, { 'content-type': 'text/html' });
      response.end(`<html><body>${secret}</body></html>`);
    });
    const json = await rawService(t, (response) => {
      response.writeHead(403, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: secret }));
    });
    await create('html', `http://127.0.0.1:${html.port}`);
    await create('json', `http://127.0.0.1:${json.port}`);

    const bytes = Buffer.byteLength(`<html><body>${secret}</body></html>`);
    const notJson = await statusWhen('html', (status) => status.phase === 'Unreachable');
    assert.equal(
      notJson.lastError,
      `GET http://127.0.0.1:${html.port}/healthz: answered 500 with a body that is not JSON (${bytes} bytes)`,
    );
    const refused = await statusWhen('json', (status) => status.phase === 'Unreachable');
    assert.match(
      String(refused.lastError),
      /^GET http:\/\/127\.0\.0\.1:\d+\/healthz: answered 403 \(\d+ bytes, its error message in the gateway's log\)$/,
    );
    assert.ok(html.requests > 0 && json.requests > 0, 'both were called');
    // The gateway's operators read what the service said in its log, not in the object.
    assert.ok(logger.lines.some((line) => line.includes(`403 ${secret}`)));
  });
});
