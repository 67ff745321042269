/**
 * Admission through the real apiserver: it calls the gateway's HTTPS webhook server, which the
 * gateway configured (ValidatingWebhookConfiguration and MutatingWebhookConfiguration) at start.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it, type TestContext } from 'node:test';
import { connect } from 'node:tls';
import { AdmissionError, operator } from '../../functions/index.ts';
import { serveFetch } from '../../gateway/cli/commands/serve/serve.ts';
import { startGateway } from '../../gateway/gateway.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import { ApiError } from '../../gateway/kube/errors.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { renewCertificates } from '../../webhooks/certificates.ts';
import { testNamespace, webhookClientCa } from '../support/cluster.ts';
import { kubectl } from '../support/kubectl.ts';
import {
  applyFile,
  eventually,
  KOPFEXAMPLES_SCOPE,
  kubeClient,
  kubeConfig,
  memoryLogger,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';
import { causeway } from '../support/processes.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const CONFIGURATIONS = ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations'];

interface Seen {
  operation: string | undefined;
  dryRun: boolean;
  old?: unknown;
  new?: unknown;
  user?: string;
}

/** Refuses spec.field "forbidden", warns about spec.legacy, and defaults spec.replicas to 1. */
function admissionOperator(options: { persistent?: boolean } = {}) {
  const seen: Seen[] = [];
  const op = operator({ name: 'admission', secret: TEST_SECRET });
  op.on.validate(
    'kopfexamples',
    { persistent: options.persistent ?? false },
    function check_field({ spec, operation, dryRun, old, new: after, userInfo, warnings }) {
      seen.push({ operation, dryRun, old, new: after, user: userInfo?.username });
      if (spec.legacy !== undefined) warnings.push('spec.legacy is deprecated');
      if (spec.field === 'forbidden') throw new AdmissionError('spec.field must not be "forbidden"', 422);
    },
  );
  op.on.mutate('kopfexamples', { operations: ['CREATE'] }, function default_replicas({ spec, patch }) {
    if (spec.replicas === undefined) patch.spec = { replicas: 1 };
  });
  return { op, seen };
}

function kex(namespace: string, name: string, spec: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: 'kopf.dev/v1',
    kind: 'KopfExample',
    metadata: { name, namespace },
    spec,
  });
}

async function configured(client: KubeClient): Promise<string[]> {
  const names: string[] = [];
  for (const kind of CONFIGURATIONS) {
    try {
      const configuration = await client.get<{ webhooks?: Array<{ name: string }> }>(
        `/apis/admissionregistration.k8s.io/v1/${kind}/causeway.dev`,
      );
      names.push(...(configuration.webhooks ?? []).map((webhook) => `${kind}: ${webhook.name}`));
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) throw error;
    }
  }
  return names;
}

describe('admission webhooks through the real apiserver', () => {
  let client: KubeClient;

  before(async () => {
    await applyFile(CRD);
    client = await kubeClient();
  });

  async function start(t: TestContext, options: { persistent?: boolean } = {}) {
    const namespace = await testNamespace(t);
    const { op, seen } = admissionOperator(options);
    const running = await runOperator(op, { namespaces: [namespace] });
    t.after(() => running.stop());
    await inEffect(namespace);
    seen.length = 0; // the dry runs that waited for the webhooks
    return { namespace, seen, running };
  }

  /** The apiserver takes up new webhook configurations shortly after they are written: until both act. */
  async function inEffect(namespace: string): Promise<void> {
    const dryRun = (spec: Record<string, unknown>) =>
      client.request<KubernetesObject>(`/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`, {
        method: 'POST',
        query: { dryRun: 'All' },
        body: JSON.parse(kex(namespace, 'probe', spec)),
      });
    await eventually('the mutating webhook in effect', async () =>
      (await dryRun({})).spec?.replicas === 1 ? true : undefined,
    );
    await eventually('the validating webhook in effect', async () => {
      try {
        await dryRun({ field: 'forbidden' });
        return undefined;
      } catch (error) {
        return error instanceof ApiError && /must not be "forbidden"/.test(error.message) ? true : undefined;
      }
    });
  }

  it("refuses an object with the handler's message: kubectl says it", async (t) => {
    const { namespace } = await start(t);
    const refused = await kubectl(['create', '-f', '-'], kex(namespace, 'bad', { field: 'forbidden' }));
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /denied the request: spec\.field must not be "forbidden"/);
    const accepted = await kubectl(['create', '-f', '-'], kex(namespace, 'good', { field: 'fine' }));
    assert.equal(accepted.code, 0, accepted.stderr);
  });

  it('stores the default a mutating handler sets, and returns warnings to the client', async (t) => {
    const { namespace } = await start(t);
    const created = await kubectl(['create', '-f', '-'], kex(namespace, 'defaulted', { legacy: true }));
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stderr, /Warning: spec\.legacy is deprecated/);
    const stored = await client.get<KubernetesObject>(
      `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/defaulted`,
    );
    assert.equal(stored.spec?.replicas, 1);
  });

  it('tells handlers of a server-side dry run, which stores nothing', async (t) => {
    const { namespace, seen } = await start(t);
    const dry = await kubectl(
      ['create', '--dry-run=server', '-f', '-'],
      kex(namespace, 'dry', { field: 'x' }),
    );
    assert.equal(dry.code, 0, dry.stderr);
    assert.deepEqual(
      seen.map(({ operation, dryRun }) => [operation, dryRun]),
      [['CREATE', true]],
    );
    const gone = await kubectl(['get', '-n', namespace, 'kopfexample', 'dry']);
    assert.notEqual(gone.code, 0);
  });

  it('gives UPDATE reviews the old and the new object, and the user who asked', async (t) => {
    const { namespace, seen } = await start(t);
    assert.equal(
      (await kubectl(['create', '-f', '-'], kex(namespace, 'changing', { field: 'one' }))).code,
      0,
    );
    const patched = await kubectl([
      'patch',
      '-n',
      namespace,
      'kopfexample',
      'changing',
      '--type=merge',
      '-p',
      '{"spec":{"field":"two"}}',
    ]);
    assert.equal(patched.code, 0, patched.stderr);
    const update = seen.find((each) => each.operation === 'UPDATE');
    assert.ok(update, 'the update was reviewed');
    const [before, after] = [update.old, update.new] as KubernetesObject[];
    assert.deepEqual([before?.spec?.field, after?.spec?.field], ['one', 'two']);
    assert.equal(typeof update.user, 'string');
  });

  it('removes its webhooks on a graceful exit, and keeps the persistent ones', async (t) => {
    const { running } = await start(t, { persistent: true });
    const names = await configured(client);
    assert.deepEqual(
      names.map((name) => name.split(':')[0]),
      CONFIGURATIONS,
      `one webhook of each: ${names.join(', ')}`,
    );
    await running.stop();
    assert.deepEqual(
      await configured(client),
      names.filter((name) => name.startsWith('validating')),
    );
    // Persistent means it outlives the gateway; the test cleans it up itself.
    await client.request(
      '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/causeway.dev',
      {
        method: 'DELETE',
      },
    );
  });

  it('lets requests through when the function service is down only for handlers that ignore failures, and stays live and ready', async (t) => {
    const namespace = await testNamespace(t);
    const op = operator({ name: 'fragile', secret: TEST_SECRET });
    op.on.validate('kopfexamples', { id: 'lenient', ignoreFailures: true, operations: ['CREATE'] }, () => {});
    op.on.validate(
      'kopfexamples',
      { id: 'strict', operations: ['CREATE'], labels: { strict: 'yes' } },
      () => {},
    );
    const server = await serveFetch(op, { port: 0, host: '127.0.0.1' });
    const gateway = await startGateway({
      functions: [{ name: op.name, url: server.url, scope: KOPFEXAMPLES_SCOPE }],
      secret: new TextEncoder().encode(TEST_SECRET),
      kubeconfig: await kubeConfig(),
      logger: memoryLogger(),
      namespaces: [namespace],
      liveness: 'http://127.0.0.1:0/healthz',
      settings: { calls: { breakerThreshold: 1 } }, // the first review that finds it gone takes it as down
    });
    t.after(() => gateway.stop());
    await gateway.synced;
    await server.close(); // the function service goes away; the gateway's webhooks stay

    const lenient = await eventually('the lenient webhook in effect', async () => {
      const created = await kubectl(['create', '-f', '-'], kex(namespace, `lenient-${Date.now()}`, {}));
      return created.stderr.includes('could not decide') ? created : undefined;
    });
    assert.equal(lenient.code, 0, lenient.stderr);
    assert.match(lenient.stderr, /Warning: admission handler lenient of "fragile" could not decide/);
    const strict = JSON.parse(kex(namespace, 'strict', {}));
    strict.metadata.labels = { strict: 'yes' };
    const refused = await kubectl(['create', '-f', '-'], JSON.stringify(strict));
    assert.notEqual(refused.code, 0);
    assert.match(
      refused.stderr,
      /admission handler strict of "fragile" could not decide: the service is down \(no calls until its health check passes\)/,
    );

    // Neither restarted nor taken out of the webhooks' Service for it: both endpoints say so, with 200.
    const live = await fetch(gateway.liveness as string);
    const liveBody = (await live.json()) as { functionServicesDown?: Record<string, string> };
    const reason = liveBody.functionServicesDown?.fragile;
    assert.ok(reason, JSON.stringify(liveBody));
    assert.deepEqual([live.status, liveBody], [200, { functionServicesDown: { fragile: reason } }]);
    const ready = await fetch(gateway.readiness as string);
    assert.deepEqual(
      [ready.status, await ready.json()],
      [200, { ready: true, functionServicesDown: { fragile: reason } }],
    );
  });

  it('keeps its certificates in a Secret, so a restart is trusted with the same CA', async (t) => {
    const namespace = await testNamespace(t);
    const secret = { namespace, name: 'causeway-webhooks' };
    const caBundleOf = async () => {
      const configuration = await client.get<{ webhooks: Array<{ clientConfig: { caBundle: string } }> }>(
        '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/causeway.dev',
      );
      return configuration.webhooks[0]?.clientConfig.caBundle;
    };
    const first = await runOperator(admissionOperator().op, {
      namespaces: [namespace],
      settings: { admission: { certificates: secret } },
    });
    const kept = await client.get<{ data: Record<string, string> }>(
      `/api/v1/namespaces/${namespace}/secrets/causeway-webhooks`,
    );
    assert.deepEqual(Object.keys(kept.data).sort(), ['ca.crt', 'tls.crt', 'tls.key'], 'no CA key');
    const authority = await client.get<{ data: Record<string, string> }>(
      `/api/v1/namespaces/${namespace}/secrets/causeway-webhooks-ca`,
    );
    assert.deepEqual(Object.keys(authority.data).sort(), ['ca.crt', 'ca.key'], 'the CA key apart');
    const bundle = await caBundleOf();
    assert.equal(bundle, kept.data['ca.crt'], 'the apiserver trusts the kept CA');
    assert.equal(authority.data['ca.crt'], bundle);
    await first.stop();

    const second = await runOperator(admissionOperator().op, {
      namespaces: [namespace],
      settings: { admission: { certificates: secret } },
    });
    t.after(() => second.stop());
    assert.equal(await caBundleOf(), bundle, 'the same CA after the restart');
    const refused = await kubectl(['create', '-f', '-'], kex(namespace, 'bad', { field: 'forbidden' }));
    assert.match(refused.stderr, /denied the request: spec\.field must not be "forbidden"/);
  });

  it('keeps on with certificates kept in one Secret with the CA key, as before, and moves that key to a Secret of its own', async (t) => {
    const namespace = await testNamespace(t);
    const { certificates } = await renewCertificates(undefined, ['127.0.0.1', 'localhost']);
    const files = {
      'ca.crt': certificates.ca.cert,
      'ca.key': certificates.ca.key,
      'tls.crt': certificates.cert,
      'tls.key': certificates.key,
    };
    await client.request(`/api/v1/namespaces/${namespace}/secrets`, {
      method: 'POST',
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'causeway-webhooks' },
        data: Object.fromEntries(
          Object.entries(files).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
        ),
      },
    });
    const logger = memoryLogger();
    const running = await runOperator(admissionOperator().op, {
      namespaces: [namespace],
      logger,
      settings: { admission: { certificates: { namespace, name: 'causeway-webhooks' } } },
    });
    t.after(() => running.stop());
    const decoded = async (name: string) => {
      const read = await client.get<{ data: Record<string, string> }>(
        `/api/v1/namespaces/${namespace}/secrets/${name}`,
      );
      return Object.fromEntries(
        Object.entries(read.data).map(([key, value]) => [key, Buffer.from(value, 'base64').toString()]),
      );
    };
    assert.deepEqual(await decoded('causeway-webhooks-ca'), {
      'ca.crt': certificates.ca.cert,
      'ca.key': certificates.ca.key,
    });
    assert.deepEqual(await decoded('causeway-webhooks'), {
      'ca.crt': certificates.ca.cert,
      'tls.crt': certificates.cert,
      'tls.key': certificates.key,
    });
    assert.ok(
      logger.lines.some((line) =>
        line.includes(
          `the webhook CA's key moved from the Secret ${namespace}/causeway-webhooks to ${namespace}/causeway-webhooks-ca`,
        ),
      ),
      logger.lines.join(''),
    );
    const configuration = await client.get<{ webhooks: Array<{ clientConfig: { caBundle: string } }> }>(
      '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/causeway.dev',
    );
    assert.equal(
      Buffer.from(configuration.webhooks[0]?.clientConfig.caBundle ?? '', 'base64').toString(),
      certificates.ca.cert,
      'the same CA trusted',
    );
    const refused = await kubectl(['create', '-f', '-'], kex(namespace, 'bad', { field: 'forbidden' }));
    assert.match(refused.stderr, /denied the request: spec\.field must not be "forbidden"/);
  });

  it('is set up from the CLI: causeway run with --webhook-listen, --webhook-certificates and --webhook-client-ca', async (t) => {
    const namespace = await testNamespace(t);
    const run = causeway(
      [
        'run',
        '--standalone',
        'examples/17-admission/operator.ts',
        '--namespace',
        namespace,
        '--webhook-listen',
        '127.0.0.1:0',
        '--webhook-certificates',
        `${namespace}/webhook-certificates`,
        // The test apiserver presents a certificate this CA signed: its reviews are answered.
        '--webhook-client-ca',
        (await webhookClientCa()).path,
      ],
      process.env,
    );
    t.after(() => run.stop());
    await run.waitFor(/admission webhooks served at https:\/\/127\.0\.0\.1:\d+/);
    const refused = await eventually('the webhook to refuse the wrong object', async () => {
      const created = await kubectl(
        ['create', '-f', '-'],
        kex(namespace, `wrong-${Date.now()}`, { field: 'wrong' }),
      );
      return created.code === 0 ? undefined : created;
    });
    assert.match(refused.stderr, /denied the request: Meh! I don't like it/);
    await client.get(`/api/v1/namespaces/${namespace}/secrets/webhook-certificates`);
  });

  it('says what is wrong with a webhook option, and exits', async () => {
    const run = causeway(
      ['run', 'examples/17-admission/operator.ts', '--webhook-service', 'nonsense'],
      process.env,
    );
    assert.equal(await run.exited(), 2, 'a usage error');
    assert.match(run.output(), /--webhook-service expects namespace\/name:port, got "nonsense"/);
  });

  it('puts the finalizer on at creation where it serves admission for a resource with delete handlers', async (t) => {
    const namespace = await testNamespace(t);
    const deleted: string[] = [];
    const op = operator({ name: 'holding', secret: TEST_SECRET });
    op.on.validate('kopfexamples', function allow() {});
    op.on.create('kopfexamples', function create_fn() {
      return { created: true };
    });
    op.on.delete('kopfexamples', function delete_fn({ name }) {
      deleted.push(name);
    });
    const running = await runOperator(op, { namespaces: [namespace] });
    t.after(() => running.stop());
    const path = `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`;
    // The apiserver takes up new webhook configurations shortly after they are written.
    await eventually('the finalizer webhook in effect', async () => {
      const dry = await client.request<KubernetesObject>(path, {
        method: 'POST',
        query: { dryRun: 'All' },
        body: JSON.parse(kex(namespace, 'dry', {})),
      });
      return dry.metadata.finalizers?.length ? true : undefined;
    });
    const created = await client.request<KubernetesObject>(path, {
      method: 'POST',
      body: JSON.parse(kex(namespace, 'held', { field: 'x' })),
    });
    assert.deepEqual(created.metadata.finalizers, ['causeway.dev/finalizer'], 'held from its creation on');
    const handled = await eventually('status.create_fn', async () => {
      const current = await client.get<KubernetesObject>(`${path}/held`);
      return current.status?.create_fn ? current : undefined;
    });
    assert.deepEqual(handled.metadata.finalizers, ['causeway.dev/finalizer']);
    await client.request(`${path}/held`, { method: 'DELETE' });
    await eventually('the object gone, after its delete handler', async () => {
      try {
        await client.get(`${path}/held`);
        return undefined;
      } catch (error) {
        return error instanceof ApiError && error.status === 404 ? true : undefined;
      }
    });
    assert.deepEqual(deleted, ['held']);
  });

  it('with an ngrok tunnel that cannot open: says so, and leaves nothing running or configured', async (t) => {
    const namespace = await testNamespace(t);
    const { op } = admissionOperator();
    const logger = memoryLogger();
    await assert.rejects(
      startGateway({
        functions: [op],
        secret: new TextEncoder().encode(TEST_SECRET),
        kubeconfig: await kubeConfig(),
        logger,
        namespaces: [namespace],
        settings: { admission: { reach: 'ngrok', ngrok: { authtokenSecret: undefined } } },
      }),
      /the ngrok tunnel could not open: .*NGROK_AUTHTOKEN/,
    );
    assert.deepEqual(await configured(client), [], 'no webhook configured');
    const served = logger.lines.find((line) => line.includes('admission webhooks served at'));
    const url = /served at (https:\/\/\S+)/.exec(served ?? '')?.[1];
    assert.ok(url, 'the server had started');
    await assert.rejects(fetch(url), 'and is closed again');
  });

  it('from the CLI: causeway run with --webhook-reach ngrok exits with the reason when the tunnel cannot open', async () => {
    const run = causeway(
      [
        'run',
        'examples/17-admission/operator.ts',
        '--standalone',
        '-n',
        'default',
        '--webhook-reach',
        'ngrok',
      ],
      { ...process.env, NGROK_AUTHTOKEN: 'not-a-real-token' },
    );
    assert.equal(await run.exited(), 1);
    assert.match(run.output(), /the ngrok tunnel could not open/);
  });

  it("serves the user's certificate files, and a renewal written to them, without a restart", async (t) => {
    const namespace = await testNamespace(t);
    const dir = await mkdtemp(join(tmpdir(), 'causeway-webhook-files-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    // As cert-manager or openssl would make them: a CA, and a serving certificate it signs.
    const first = (await renewCertificates(undefined, ['127.0.0.1', 'localhost'])).certificates;
    const files = { cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key'), ca: join(dir, 'ca.crt') };
    const write = async (certificates: typeof first) => {
      await writeFile(files.key, certificates.key);
      await writeFile(files.cert, certificates.cert);
      await writeFile(files.ca, certificates.ca.cert);
    };
    await write(first);
    const { op } = admissionOperator();
    const logger = memoryLogger();
    const running = await runOperator(op, {
      namespaces: [namespace],
      logger,
      settings: { admission: { certificateFiles: files, filesCheckIntervalMs: 100 } },
    });
    t.after(() => running.stop());
    const refused = async () => {
      const created = await kubectl(
        ['create', '-f', '-'],
        kex(namespace, `bad-${Date.now()}`, { field: 'forbidden' }),
      );
      return /denied the request: spec\.field must not be "forbidden"/.test(created.stderr)
        ? true
        : undefined;
    };
    await eventually('a refusal through the webhook served with the given files', refused);

    const renewed = (await renewCertificates(first, ['127.0.0.1', 'localhost', 'renewed.example']))
      .certificates;
    await write(renewed);
    const url = await webhookUrl(client);
    await eventually('the renewed certificate served', async () =>
      (await servedNames(url)).includes('renewed.example') ? true : undefined,
    );
    assert.equal(await refused(), true, 'the apiserver still trusts it: the same CA');

    // Renewals while reviews flow: every review is answered, none fails on the change.
    const probe = JSON.parse(kex(namespace, 'probe', { field: 'forbidden' }));
    const path = `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`;
    let renewing = true;
    t.after(() => {
      renewing = false; // as well when the test failed before it ended the flow
    });
    const outcomes: string[] = [];
    const flow = (async () => {
      while (renewing) {
        try {
          await client.request(path, { method: 'POST', query: { dryRun: 'All' }, body: probe });
          outcomes.push('allowed');
        } catch (error) {
          outcomes.push(
            error instanceof ApiError && /must not be "forbidden"/.test(error.message)
              ? 'denied'
              : String(error),
          );
        }
      }
    })();
    for (let round = 0; round < 5; round++) {
      const next = (await renewCertificates(first, ['127.0.0.1', 'localhost', `round-${round}.example`]))
        .certificates;
      if (round === 0) {
        // A renewal seen half-written (its CA file cut short) is refused, not given to the apiserver.
        await write({ ...next, ca: { ...next.ca, cert: next.ca.cert.slice(0, 100) } });
        await eventually('the half-written renewal refused', async () =>
          logger.lines.some((line) => line.includes(`${files.ca} holds a certificate cut short`))
            ? true
            : undefined,
        );
      }
      await write(next);
      await eventually(`renewal ${round} served`, async () =>
        (await servedNames(url)).includes(`round-${round}.example`) ? true : undefined,
      );
      // Reviews answered on each renewal, however quickly it came: the next one waits for them.
      const served = outcomes.length;
      await eventually(`reviews answered on renewal ${round}`, async () =>
        outcomes.length >= served + 2 ? true : undefined,
      );
    }
    renewing = false;
    await flow;
    assert.ok(outcomes.length >= 10, `reviews flowed meanwhile: ${outcomes.length}`);
    assert.deepEqual(new Set(outcomes), new Set(['denied']), 'every one answered by the webhook');
  });
});

async function webhookUrl(client: KubeClient): Promise<string> {
  const configuration = await client.get<{ webhooks: Array<{ clientConfig: { url: string } }> }>(
    '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/causeway.dev',
  );
  return new URL(configuration.webhooks[0]?.clientConfig.url ?? '').origin;
}

/** The subject alternative names of the certificate a TLS server presents now. */
function servedNames(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), rejectUnauthorized: false }, () => {
      resolve(socket.getPeerX509Certificate()?.subjectAltName ?? '');
      socket.end();
    });
    socket.on('error', reject);
  });
}
