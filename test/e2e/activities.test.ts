/**
 * The operator's activities on a real apiserver: startup before anything is watched, cleanup as the
 * gateway stops, the liveness endpoint with the probes' results and readiness beside it, logging in
 * through a function service, and a kubeconfig whose user is an exec plugin.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { operator, PermanentError, TemporaryError } from '../../functions/index.ts';
import { serveFetch } from '../../gateway/cli/commands/serve/serve.ts';
import { startGateway } from '../../gateway/gateway.ts';
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
  runOperator,
  statusOnceThere,
  TEST_SECRET,
} from '../support/operator.ts';
import { causeway, freePort } from '../support/processes.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);

interface HealthAnswer {
  status: number;
  body: Record<string, unknown>;
}

async function health(url: string): Promise<HealthAnswer> {
  const response = await fetch(url);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Polls a health endpoint until its answer is the one `wanted` waits for. */
function healthOnce(url: string, what: string, wanted: (answer: HealthAnswer) => boolean) {
  return eventually(what, async () => {
    const answer = await health(url);
    return wanted(answer) ? answer : undefined;
  });
}

describe('activities', () => {
  before(() => applyFile(CRD));

  it('runs startup before the first handler, retrying it, and cleanup as the gateway stops', async (t) => {
    const namespace = await testNamespace(t);
    // There before the gateway starts: its creation is the first thing the watch dispatches.
    await createKopfExample(namespace, 'early');
    const order: string[] = [];
    const op = operator({ name: 'hooks', secret: TEST_SECRET });
    op.on.startup(async function startup_fn_retried({ retry, memo }) {
      order.push(`startup attempt ${retry}`);
      if (retry < 2) throw new TemporaryError(`going to succeed in ${2 - retry} tries`, { delay: 0.2 });
      memo.startedAt = 'startup';
    });
    op.on.create('kopfexamples', function create_fn({ name }) {
      order.push(`create ${name}`);
    });
    op.on.cleanup(function cleanup_fn({ memo }) {
      order.push(`cleanup after ${String(memo.startedAt)}`);
    });
    const running = await runOperator(op, { namespaces: [namespace] });
    t.after(() => running.stop());
    await eventually('the create handler', async () => (order.includes('create early') ? true : undefined));
    assert.deepEqual(order, ['startup attempt 0', 'startup attempt 1', 'startup attempt 2', 'create early']);
    await running.stop();
    assert.deepEqual(order.slice(4), ['cleanup after startup'], 'the memo startup kept reaches cleanup');
  });

  it('fails the start, naming the service and the handler, and watches nothing', async (t) => {
    const namespace = await testNamespace(t);
    const path = await createKopfExample(namespace, 'untouched');
    const op = operator({ name: 'refusing', secret: TEST_SECRET });
    op.on.startup(function needs_database() {
      throw new PermanentError('no database at db:5432');
    });
    op.on.create('kopfexamples', function create_fn() {
      assert.fail('no handler runs when the start failed');
    });
    await assert.rejects(runOperator(op, { namespaces: [namespace] }), {
      message:
        'cannot start: startup handler "needs_database" of function service "refusing" failed permanently: no database at db:5432',
    });
    const object = await (await kubeClient()).get<KubernetesObject>(path);
    assert.equal(object.metadata.finalizers, undefined);
    assert.equal(object.status, undefined, 'nothing written');
  });

  it('answers liveness with the probes, 500 when one fails and while stopping; readiness 200, 503 while stopping; both 200 with a service down, naming it', async (t) => {
    const namespace = await testNamespace(t);
    let tasks: number | Error = 3;
    const op = operator({ name: 'hooks', secret: TEST_SECRET });
    op.on.probe(function tasks_count() {
      if (tasks instanceof Error) throw tasks;
      return tasks;
    });
    op.on.probe({ id: 'monitored' }, () => ({ [namespace]: ['a', 'b'] }));
    const stopping = Promise.withResolvers<void>();
    const cleaning = Promise.withResolvers<void>();
    op.on.cleanup(async function cleanup_fn() {
      cleaning.resolve();
      await stopping.promise; // until the test has seen the endpoint while it runs
    });
    const server = await serveFetch(op, { port: 0, host: '127.0.0.1' });
    t.after(() => server.close());
    const gateway = await startGateway({
      functions: [{ name: 'hooks', url: server.url, scope: KOPFEXAMPLES_SCOPE }],
      secret: new TextEncoder().encode(TEST_SECRET),
      kubeconfig: await kubeConfig(),
      namespaces: [namespace],
      logger: memoryLogger(),
      liveness: 'http://127.0.0.1:0/healthz',
      // No cache, for the test to see each change at once; a service taken as down at its first failure.
      settings: {
        activities: { probeCacheMs: 0 },
        calls: { breakerThreshold: 1, serviceRetryDelaysS: [60] },
      },
    });
    t.after(() => gateway.stop());
    const url = gateway.liveness as string;
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/healthz$/);
    assert.deepEqual(await health(url), {
      status: 200,
      body: { tasks_count: 3, monitored: 'ok' },
    });
    const readiness = gateway.readiness as string;
    assert.equal(readiness, new URL('/readyz', url).href);
    await gateway.synced;
    assert.deepEqual(await health(readiness), { status: 200, body: { ready: true } });

    tasks = new TemporaryError('counting is stuck');
    assert.deepEqual(await health(url), {
      status: 500,
      body: { error: `probe "tasks_count" of "hooks" failed (temporary; why, in the gateway's log)` },
    });
    assert.equal((await health(readiness)).status, 200, 'a failing probe leaves the gateway ready');
    tasks = 4;
    assert.equal((await health(url)).status, 200);

    const stopped = gateway.stop();
    await cleaning.promise;
    assert.deepEqual(await health(url), { status: 500, body: { error: 'the gateway is stopping' } });
    assert.deepEqual(await health(readiness), { status: 503, body: { error: 'the gateway is stopping' } });
    stopping.resolve();
    await stopped;
    await assert.rejects(fetch(url), /fetch failed/, 'closed once stopped');

    // Another gateway for the same service, which then goes away: its breaker opens, and both endpoints
    // say so, with 200: a restart, or leaving the Service, would not bring it back.
    const again = await startGateway({
      functions: [{ name: 'hooks', url: server.url, scope: KOPFEXAMPLES_SCOPE }],
      secret: new TextEncoder().encode(TEST_SECRET),
      kubeconfig: await kubeConfig(),
      namespaces: [namespace],
      logger: memoryLogger(),
      liveness: 'http://127.0.0.1:0/healthz',
      settings: {
        activities: { probeCacheMs: 0, cleanupTimeoutMs: 1000 },
        calls: { breakerThreshold: 1, serviceRetryDelaysS: [60] },
      },
    });
    t.after(() => again.stop());
    await again.synced;
    assert.equal((await health(again.liveness as string)).status, 200);
    await server.close();
    // Each request calls the probes, whose call finds the service unreachable and opens its breaker.
    const down = await healthOnce(
      again.liveness as string,
      'the liveness endpoint reporting the service down',
      ({ status, body }) => status === 200 && 'functionServicesDown' in body,
    );
    const reason = String((down.body.functionServicesDown as Record<string, unknown>).hooks);
    assert.ok(reason.startsWith(`POST ${server.url}/`), `why it is down: ${reason}`);
    assert.deepEqual(down.body, { functionServicesDown: { hooks: reason } }, 'its probes not called');
    assert.deepEqual(await health(again.readiness as string), {
      status: 200,
      body: { ready: true, functionServicesDown: { hooks: reason } },
    });
  });

  it('logs in through a function service, again after a 401 and before its credentials expire', async (t) => {
    const namespace = await testNamespace(t);
    const cluster = await testCluster();
    const given: string[] = [];
    const op = operator({ name: 'credentials', secret: TEST_SECRET });
    op.on.login(function login_fn() {
      // First a token the apiserver refuses (revoked, say), then the test cluster's, good for 4 s.
      const token = given.length === 0 ? 'a-revoked-token' : cluster.token;
      given.push(token === cluster.token ? 'good' : 'revoked');
      return {
        server: cluster.server,
        caData: cluster.caPem,
        token,
        expiration: new Date(Date.now() + 4000).toISOString(),
      };
    });
    op.on.create('kopfexamples', function create_fn({ name }) {
      return `hello ${name}`;
    });
    const running = await runOperator(op, {
      namespaces: [namespace],
      kubeconfig: undefined,
      loginFrom: 'credentials',
    });
    t.after(() => running.stop());
    const first = await createKopfExample(namespace, 'first');
    assert.equal(await statusOnceThere(first, 'create_fn'), 'hello first');
    assert.deepEqual(given.slice(0, 2), ['revoked', 'good']);
    const logins = given.length;
    await new Promise((resolve) => setTimeout(resolve, 4000)); // the credentials' lifetime: nothing to poll
    const second = await createKopfExample(namespace, 'second');
    assert.equal(await statusOnceThere(second, 'create_fn'), 'hello second');
    assert.ok(given.length > logins, 'logged in again as the credentials expired');
    assert.ok(given.slice(1).every((token) => token === 'good'));
  });

  it('refuses to log in through a service while its signing keys would be in the cluster', async () => {
    const op = operator({ name: 'credentials', secret: TEST_SECRET });
    op.on.login(function login_fn() {
      return { server: 'https://10.0.0.1:6443', token: 't' };
    });
    await assert.rejects(
      runOperator(op, {
        namespaces: ['default'],
        kubeconfig: undefined,
        loginFrom: 'credentials',
        settings: { signing: { keys: { namespace: 'default', name: 'keys' } } },
      }),
      /cannot read its signing keys from a Secret before it logs in through "credentials"/,
    );
  });

  it('runs with a kubeconfig whose user is an exec plugin, run again once its credential expires', async (t) => {
    const namespace = await testNamespace(t);
    const cluster = await testCluster();
    const dir = await mkdtemp(join(tmpdir(), 'causeway-exec-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const runs = join(dir, 'runs');
    const plugin = join(dir, 'credential.mjs');
    // A client-go credential plugin: prints an ExecCredential with the cluster's token, good for 3 s.
    await writeFile(
      plugin,
      `import { appendFileSync } from 'node:fs';
appendFileSync(${JSON.stringify(runs)}, 'run\\n');
process.stdout.write(JSON.stringify({
  apiVersion: 'client.authentication.k8s.io/v1',
  kind: 'ExecCredential',
  status: { token: process.env.TEST_TOKEN, expirationTimestamp: new Date(Date.now() + 3000).toISOString() },
}));
`,
    );
    const kubeconfig = new KubeConfig();
    kubeconfig.loadFromOptions({
      clusters: [
        { name: 'test', server: cluster.server, caData: Buffer.from(cluster.caPem).toString('base64') },
      ],
      users: [
        {
          name: 'exec-user',
          exec: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: process.execPath,
            args: [plugin],
            env: [{ name: 'TEST_TOKEN', value: cluster.token }],
            interactiveMode: 'Never',
          },
        },
      ],
      contexts: [{ name: 'test', cluster: 'test', user: 'exec-user' }],
      currentContext: 'test',
    });
    const op = operator({ name: 'exec', secret: TEST_SECRET });
    op.on.create('kopfexamples', function create_fn({ name }) {
      return `hello ${name}`;
    });
    const running = await runOperator(op, { namespaces: [namespace], kubeconfig });
    t.after(() => running.stop());
    const first = await createKopfExample(namespace, 'first');
    assert.equal(await statusOnceThere(first, 'create_fn'), 'hello first');
    const count = async () => (await readFile(runs, 'utf8')).split('\n').filter(Boolean).length;
    const before = await count();
    assert.ok(before >= 1);
    await new Promise((resolve) => setTimeout(resolve, 3100)); // the credential's lifetime: nothing to poll
    const second = await createKopfExample(namespace, 'second');
    assert.equal(await statusOnceThere(second, 'create_fn'), 'hello second');
    assert.ok((await count()) > before, 'the plugin ran again for a fresh credential');
  });
});

describe('activities, with the CLI', () => {
  before(() => applyFile(CRD));
  const operatorModule = 'test/fixtures/activities-operator.ts';

  it('exits 1 with the message when a startup handler fails for good', async () => {
    const run = causeway(['run', operatorModule, '--standalone', '-n', 'default'], {
      ...process.env,
      CAUSEWAY_TEST_STARTUP_FAILS: 'the licence has expired',
    });
    assert.equal(await run.exited(), 1);
    assert.match(
      run.output(),
      /causeway: cannot start: startup handler "prepare" of function service "activities" failed permanently: the licence has expired\n/,
    );
  });

  it('serves --liveness and readiness beside it, and runs the cleanup handlers on SIGTERM before it exits 0', async (t) => {
    const namespace = await testNamespace(t);
    const port = await freePort();
    const run = causeway(
      [
        'run',
        operatorModule,
        '--standalone',
        '-n',
        namespace,
        '--liveness',
        `http://127.0.0.1:${port}/healthz`,
      ],
      process.env,
    );
    t.after(() => run.stop());
    await run.waitFor(/liveness endpoint at http:\/\/127\.0\.0\.1:\d+\/healthz/);
    assert.deepEqual(await health(`http://127.0.0.1:${port}/healthz`), {
      status: 200,
      body: { ready: 'yes' },
    });
    await healthOnce(
      `http://127.0.0.1:${port}/readyz`,
      'readiness, once listed',
      ({ status }) => status === 200,
    );
    const path = await createKopfExample(namespace, 'one');
    assert.equal(await statusOnceThere(path, 'create_fn'), 'created');
    assert.equal(await run.stop('SIGTERM'), 0);
    assert.match(run.output(), /prepared handler=prepare /);
    assert.match(
      run.output(),
      /tidied up handler=tidy [\s\S]*cleanup handler "tidy" of function service "activities" succeeded/,
    );
  });
});
