/**
 * `causeway dev`, as a developer uses it, against the real apiserver: a module reloaded on save with no
 * restart (its new handlers served, webhooks included), and a dev session (held by a Lease, or by the
 * service's FunctionService) that takes a deployed gateway's calls to the laptop and gives them back
 * when it ends or its process is killed, with every object handled exactly once across the switches.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { applyManifests } from '../../gateway/kube/apply.ts';
import {
  functionServiceDefinition,
  functionServicesPath,
} from '../../gateway/services/function-service-objects.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { isObject } from '../../protocol/json.ts';
import { testCluster, testNamespace } from '../support/cluster.ts';
import { kubectl } from '../support/kubectl.ts';
import {
  applyFile,
  createFunctionService,
  createKopfExample,
  eventually,
  kubeClient,
  readPublishedKeys,
  statusOnceThere,
  TEST_SECRET,
} from '../support/operator.ts';
import { type CliProcess, causeway, freePort } from '../support/processes.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);

/**
 * An operator module as a user writes one, in a folder of its own: its create handler says which
 * version handled the object and appends the object's name to $CAUSEWAY_CALL_LOG; `extra` adds handlers.
 */
function operatorSource(version: string, extra = ''): string {
  return `import { openSync, writeSync } from 'node:fs';
import { AdmissionError, operator } from '${ROOT}functions/index.ts';

const log = openSync(process.env.CAUSEWAY_CALL_LOG, 'a');
const op = operator({ name: 'dev-e2e' });

op.on.create('kopfexamples', function create_fn({ name }) {
  writeSync(log, \`\${name}\\n\`);
  return { version: '${version}' };
});
${extra}
export default op;
`;
}

function moduleIn(folder: string, source: string): string {
  const path = join(folder, 'operator.ts');
  writeFileSync(path, source);
  return path;
}

/** The dev sessions' Leases in the namespace, as `kubectl get -o name` lists them. */
async function sessionLeases(namespace: string): Promise<string> {
  const listed = await kubectl([
    'get',
    'leases',
    '-n',
    namespace,
    '-l',
    'causeway.dev/dev-session',
    '-o',
    'name',
  ]);
  return listed.stdout.trim();
}

async function handledBy(namespace: string, name: string): Promise<string | undefined> {
  const path = `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/${name}`;
  return ((await statusOnceThere(path, 'create_fn')) as { version?: string }).version;
}

/** The CLI's environment: with a shared secret unless `keys`, where every process signs or verifies with the gateway's keys. */
async function environment(t: TestContext, { keys = false } = {}) {
  await applyFile(CRD);
  const namespace = await testNamespace(t);
  const callLog = join(mkdtempSync(join(tmpdir(), 'causeway-dev-')), 'calls');
  writeFileSync(callLog, '');
  const env = {
    ...process.env,
    KUBECONFIG: (await testCluster()).kubeconfigPath,
    CAUSEWAY_SECRET: keys ? '' : TEST_SECRET,
    CAUSEWAY_CALL_LOG: callLog,
  };
  const processes: CliProcess[] = [];
  t.after(async () => {
    for (const each of processes.reverse()) await each.stop();
  });
  /** `causeway args`; `format` given, with no CAUSEWAY_LOG_FORMAT but `--log-format format`. */
  const start = (args: string[], format?: 'text' | 'json') => {
    const unset: NodeJS.ProcessEnv = { ...env };
    delete unset.CAUSEWAY_LOG_FORMAT;
    const started = format ? causeway([...args, '--log-format', format], unset) : causeway(args, env);
    processes.push(started);
    return started;
  };
  const calls = () => readFileSync(callLog, 'utf8').split('\n').filter(Boolean).sort();
  return { namespace, start, calls };
}

describe('causeway dev', () => {
  it('with a gateway of its own: a saved edit is served without a restart, new handlers and webhooks included', async (t) => {
    const { namespace, start } = await environment(t);
    const folder = mkdtempSync(join(tmpdir(), 'causeway-dev-module-'));
    const module = moduleIn(folder, operatorSource('v1'));
    const dev = start(
      ['dev', module, '--standalone', '-n', namespace, '--annotation-prefix', `${namespace}.causeway.dev`],
      'text',
    );
    await dev.waitFor(/dev: serving "dev-e2e"/);
    // Its function service, a process of its own writing to a pipe, writes text as it was told to.
    assert.match(dev.output(), /^\S+ INFO +function service listening on http:\/\/127\.0\.0\.1:\d+$/m);

    await createKopfExample(namespace, 'first');
    assert.equal(await handledBy(namespace, 'first'), 'v1');

    // A new version with a validating handler, which the gateway has not served before.
    moduleIn(
      folder,
      operatorSource(
        'v2',
        `op.on.validate('kopfexamples', function no_forbidden({ spec }) {
  if (spec.field === 'forbidden') throw new AdmissionError('spec.field must not be "forbidden"');
});
`,
      ),
    );
    await dev.waitFor(/dev: reloaded/);
    await createKopfExample(namespace, 'second');
    assert.equal(await handledBy(namespace, 'second'), 'v2');
    // The apiserver takes up a new webhook configuration shortly after it is written: a dry run until then.
    const bad = JSON.stringify({
      apiVersion: 'kopf.dev/v1',
      kind: 'KopfExample',
      metadata: { name: 'bad' },
      spec: { field: 'forbidden' },
    });
    const denied = await eventually('the new validating handler in effect', async () => {
      const attempt = await kubectl(['create', '--dry-run=server', '-n', namespace, '-f', '-'], bad);
      return attempt.code !== 0 ? attempt : undefined;
    });
    assert.match(denied.stderr, /spec\.field must not be "forbidden"/);
    assert.equal(dev.child.exitCode, null, 'the same process served both versions');
  });

  it('as a session with a deployed gateway: calls go to the laptop and back, each object handled once', async (t) => {
    // As deployed: the gateway signs with its keys, and neither the service nor the laptop holds a secret.
    const { namespace, start, calls } = await environment(t, { keys: true });
    const keys = `${namespace}/causeway-signing-keys`;
    const deployed = moduleIn(mkdtempSync(join(tmpdir(), 'causeway-deployed-')), operatorSource('deployed'));
    const laptop = mkdtempSync(join(tmpdir(), 'causeway-laptop-'));
    const port = await freePort();
    const gateway = start([
      'gateway',
      '--standalone',
      '--functions',
      `dev-e2e=http://127.0.0.1:${port}`,
      '--function-scope',
      'dev-e2e=test/fixtures/kopfexample-scope.yaml',
      '--signing-keys',
      keys,
      '-n',
      namespace,
      '--dev-sessions',
      namespace,
      // The service allows dev sessions to this host's ports, where `causeway dev --dev-reach local` listens.
      '--function-dev-sessions',
      'dev-e2e=http://127.0.0.1:*',
    ]);
    // kubelet's part: the deployed service's mounted copy of the public keys.
    const jwks = join(mkdtempSync(join(tmpdir(), 'causeway-keys-')), 'jwks.json');
    const published = await eventually('the published public keys', () =>
      readPublishedKeys({ namespace, name: 'causeway-signing-keys' }),
    );
    writeFileSync(jwks, published);
    start(['serve', deployed, '--port', String(port), '--host', '127.0.0.1', '--jwks-file', jwks]);
    await gateway.waitFor(/function service "dev-e2e" at/);

    await createKopfExample(namespace, 'before');
    assert.equal(await handledBy(namespace, 'before'), 'deployed');

    const session = [
      'dev',
      moduleIn(laptop, operatorSource('laptop-1')),
      '--dev-sessions',
      namespace,
      '--signing-keys',
      keys,
    ];
    const dev = start([...session, '--session-seconds', '3', '--dev-reach', 'local']);
    await gateway.waitFor(/calls of "dev-e2e" go to http:\/\/127\.0\.0\.1:\d+ \(a dev session\)/);
    const lease = await sessionLeases(namespace);
    assert.equal(lease, 'lease.coordination.k8s.io/causeway-dev-dev-e2e', 'the session shows in kubectl');
    await createKopfExample(namespace, 'during');
    assert.equal(await handledBy(namespace, 'during'), 'laptop-1');

    moduleIn(laptop, operatorSource('laptop-2'));
    await dev.waitFor(/dev: reloaded/);
    await createKopfExample(namespace, 'edited');
    assert.equal(await handledBy(namespace, 'edited'), 'laptop-2');

    // Ended on purpose: the Lease goes, and the calls go home at once.
    assert.equal(await dev.stop('SIGINT'), 0);
    await gateway.waitFor(/calls of "dev-e2e" go to \S+ again/);
    await createKopfExample(namespace, 'after');
    assert.equal(await handledBy(namespace, 'after'), 'deployed');

    // A laptop that vanishes: the calls come home when its Lease is not renewed.
    const again = start([...session, '--session-seconds', '3', '--dev-reach', 'local']);
    await eventually('the second session', async () =>
      (gateway.output().match(/\(a dev session\)/g)?.length ?? 0) >= 2 ? true : undefined,
    );
    await createKopfExample(namespace, 'second-session');
    assert.equal(await handledBy(namespace, 'second-session'), 'laptop-2');
    await again.stop('SIGKILL');
    await createKopfExample(namespace, 'vanished');
    assert.equal(await handledBy(namespace, 'vanished'), 'deployed');
    assert.equal(gateway.output().match(/go to \S+ again/g)?.length, 2);

    assert.deepEqual(calls(), ['after', 'before', 'during', 'edited', 'second-session', 'vanished']);
  });

  it("as a session held by the service's FunctionService: its status shows the laptop while it lasts", async (t) => {
    const { namespace, start, calls } = await environment(t, { keys: true });
    const client = await kubeClient();
    await applyManifests(client, [functionServiceDefinition()], { fieldManager: 'causeway-tests' });
    const keys = `${namespace}/causeway-signing-keys`;
    const deployed = moduleIn(mkdtempSync(join(tmpdir(), 'causeway-deployed-')), operatorSource('deployed'));
    const port = await freePort();
    const object = `${functionServicesPath(namespace)}/dev-e2e`;
    await createFunctionService(namespace, 'dev-e2e', {
      url: `http://127.0.0.1:${port}`,
      scope: { resources: ['kopfexamples.kopf.dev'] },
    });
    // No --dev-sessions: a FunctionService's field is followed wherever the gateway serves them (as its
    // spec.devSessions allows); its url is on this host, which a gateway refuses unless told otherwise.
    const gateway = start([
      'gateway',
      '--standalone',
      '--function-services',
      namespace,
      '--allow-loopback-functions',
      '--signing-keys',
      keys,
      '-n',
      namespace,
    ]);
    const jwks = join(mkdtempSync(join(tmpdir(), 'causeway-keys-')), 'jwks.json');
    writeFileSync(
      jwks,
      await eventually('the published public keys', () =>
        readPublishedKeys({ namespace, name: 'causeway-signing-keys' }),
      ),
    );
    start(['serve', deployed, '--port', String(port), '--host', '127.0.0.1', '--jwks-file', jwks]);
    const statusWhen = (what: string, test: (status: Record<string, unknown>) => boolean) =>
      eventually(what, async () => {
        const { status } = await client.get<KubernetesObject>(object);
        return status && test(status) ? status : undefined;
      });
    await statusWhen('the service Ready', (status) => status.phase === 'Ready');
    await createKopfExample(namespace, 'before');
    assert.equal(await handledBy(namespace, 'before'), 'deployed');

    const laptop = moduleIn(mkdtempSync(join(tmpdir(), 'causeway-laptop-')), operatorSource('laptop'));
    const session = ['dev', laptop, '--dev-sessions', namespace, '--signing-keys', keys];
    // Not allowed by the object yet: the laptop is told so, and the gateway ignores it.
    const refused = start([...session, '--session-seconds', '3', '--dev-reach', 'local']);
    await refused.waitFor(/dev: the gateway will ignore this session: "dev-e2e" does not allow dev sessions/);
    await gateway.waitFor(
      new RegExp(`the dev session of FunctionService ${namespace}/dev-e2e for "dev-e2e" is ignored`),
    );
    await createKopfExample(namespace, 'refused');
    assert.equal(await handledBy(namespace, 'refused'), 'deployed');
    assert.equal(await refused.stop('SIGINT'), 0);
    await client.patch(object, 'merge', {
      spec: { devSessions: { allowed: true, urls: ['http://127.0.0.1:*'], maxSeconds: 60 } },
    });

    const dev = start([...session, '--session-seconds', '3', '--dev-reach', 'local']);
    await dev.waitFor(new RegExp(`\\(FunctionService ${namespace}/dev-e2e\\)`));
    const away = await statusWhen('the session in the status', (status) => isObject(status.devSession));
    assert.match(String((away.devSession as { holder: string }).holder), /.@./, 'who holds it: user@host');
    const leases = await sessionLeases(namespace);
    assert.equal(leases, '', 'no Lease: the FunctionService holds the session');
    await createKopfExample(namespace, 'during');
    assert.equal(await handledBy(namespace, 'during'), 'laptop');

    // Ended on purpose: the field goes, and the calls and the status come home at once.
    assert.equal(await dev.stop('SIGINT'), 0);
    await statusWhen('no session in the status', (status) => status.devSession === undefined);
    assert.equal((await client.get<KubernetesObject>(object)).spec?.devSession, undefined);
    await createKopfExample(namespace, 'after');
    assert.equal(await handledBy(namespace, 'after'), 'deployed');

    // A laptop that vanishes: its field stays, but not renewed, it no longer routes the calls.
    const again = start([...session, '--session-seconds', '3', '--dev-reach', 'local']);
    await again.waitFor(new RegExp(`\\(FunctionService ${namespace}/dev-e2e\\)`));
    await statusWhen('the second session in the status', (status) => isObject(status.devSession));
    await again.stop('SIGKILL');
    await statusWhen('the expired session gone from the status', (status) => status.devSession === undefined);
    await createKopfExample(namespace, 'vanished');
    assert.equal(await handledBy(namespace, 'vanished'), 'deployed');

    assert.deepEqual(calls(), ['after', 'before', 'during', 'refused', 'vanished']);
  });
});
