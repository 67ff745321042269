/**
 * Dev sessions only where a service allows them (issue 21, point 3), on the real control plane: whoever
 * may write a Lease in the --dev-sessions namespace, or a FunctionService, tries to take a service's
 * calls (whole objects) to a URL of theirs. A Lease naming a service that allows no dev sessions is
 * ignored, said once; a URL outside the service's globs is refused; a session asking to last for ever
 * lasts what the service allows, and its return is told by an Event; and a second FunctionService
 * naming a service already named is refused, the older keeping it. Meanwhile the deployed service is
 * called, and the attacker's URL never is.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { operator } from '../../../functions/index.ts';
import { serveFetch } from '../../../gateway/cli/commands/serve/serve.ts';
import type { FunctionEndpoint } from '../../../gateway/dispatch/services.ts';
import { startGateway } from '../../../gateway/gateway.ts';
import { applyManifests } from '../../../gateway/kube/apply.ts';
import { devSessionLease, devSessionLeaseName } from '../../../gateway/services/dev-sessions.ts';
import {
  DEV_SESSION_RENEWED,
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
import { causeway } from '../../support/processes.ts';

const CRD = new URL('../../../examples/01-minimal/crd.yaml', import.meta.url);
const SCOPE = { resources: ['kopfexamples.kopf.dev'] };
const LEASES = (namespace: string) => `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;

/** An instance of the "billing" service saying who handled the object, counting the calls it gets. */
async function billing(t: TestContext, who: string) {
  const op = operator({ name: 'billing', secret: TEST_SECRET });
  op.on.create('kopfexamples', function create_fn() {
    return { by: who };
  });
  const counted = { calls: 0 };
  const server = await serveFetch(
    {
      fetch: (request: Request) => {
        if (new URL(request.url).pathname.endsWith('/invoke')) counted.calls++;
        return op.fetch(request);
      },
    },
    { port: 0, host: '127.0.0.1' },
  );
  t.after(() => server.close());
  return Object.assign(counted, { url: server.url, port: new URL(server.url).port });
}

/** The namespace, the deployed service and an attacker's (or laptop's) instance of it. */
async function environment(t: TestContext) {
  await applyFile(CRD);
  const client = await kubeClient();
  await applyManifests(client, [functionServiceDefinition()], { fieldManager: 'causeway-tests' });
  const namespace = await testNamespace(t);
  const [deployed, laptop] = [await billing(t, 'deployed'), await billing(t, 'laptop')];
  const logger = memoryLogger();
  const start = async (options: {
    functions?: FunctionEndpoint[];
    functionServices?: boolean;
    settings?: SettingsPatch;
  }) => {
    const gateway = await startGateway({
      functions: options.functions ?? [],
      secret: new TextEncoder().encode(TEST_SECRET),
      kubeconfig: await kubeConfig(),
      namespaces: [namespace],
      devSessions: namespace,
      ...(options.functionServices ? { functionServices: namespace } : {}),
      logger,
      ...(options.settings ? { settings: options.settings } : {}),
    });
    t.after(() => gateway.stop());
    await gateway.synced;
    return gateway;
  };
  const handledBy = async (name: string) =>
    ((await statusOnceThere(await createKopfExample(namespace, name), 'create_fn')) as { by: string }).by;
  const logged = (pattern: RegExp) =>
    eventually(`a log line matching ${pattern}`, async () => logger.lines.find((line) => pattern.test(line)));
  return { client, namespace, deployed, laptop, logger, start, handledBy, logged };
}

/** A Lease as `causeway dev` holds one for `service`, sending its calls to `url`. */
function lease(service: string, url: string, durationSeconds = 30) {
  return devSessionLease(
    { service, url, revision: '1', holder: 'mallory@laptop', durationSeconds },
    'causeway.dev',
    new Date(),
  );
}

describe('dev sessions, from a hostile Lease or FunctionService', () => {
  it('are ignored for a service that does not allow them, with one warning however often renewed; its calls stay home', async (t) => {
    const { client, namespace, deployed, laptop, logger, start, handledBy, logged } = await environment(t);
    await start({ functions: [{ name: 'billing', url: deployed.url, scope: SCOPE }] });

    const leases = LEASES(namespace);
    await client.request(leases, { method: 'POST', body: lease('billing', laptop.url) });
    const refusal =
      /the dev session of Lease \S+\/causeway-dev-billing for "billing" is ignored: "billing" does not allow dev sessions/;
    await logged(refusal);
    // Renewed, as `causeway dev` does every few seconds; then another Lease, whose warning comes after.
    await client.patch(`${leases}/${devSessionLeaseName('billing')}`, 'merge', {
      spec: { renewTime: new Date(Date.now() + 1000).toISOString().replace('Z', '000Z') },
    });
    await client.request(leases, { method: 'POST', body: lease('payroll', laptop.url) });
    await logged(/the dev session of Lease \S+\/causeway-dev-payroll for "payroll" is ignored/);
    assert.equal(
      logger.lines.filter((line) => refusal.test(line)).length,
      1,
      'said once, not at each renewal',
    );

    assert.equal(await handledBy('during-the-lease'), 'deployed');
    assert.equal(laptop.calls, 0, 'nothing was sent to the Lease URL');
    assert.ok(!logger.lines.some((line) => /\(a dev session\)/.test(line)));
  });

  it("are refused at a URL outside the service's globs, and followed at one inside", async (t) => {
    const { client, namespace, deployed, laptop, start, handledBy, logged } = await environment(t);
    await start({
      functions: [
        {
          name: 'billing',
          url: deployed.url,
          scope: SCOPE,
          devSessions: { urls: ['https://*.ngrok.app', 'http://localhost:*'] },
        },
      ],
    });

    const leases = LEASES(namespace);
    await client.request(leases, { method: 'POST', body: lease('billing', laptop.url) });
    await logged(
      /for "billing" is ignored: its URL http:\/\/127\.0\.0\.1:\d+ matches none that "billing" allows \(https:\/\/\*\.ngrok\.app, http:\/\/localhost:\*\)/,
    );
    assert.equal(await handledBy('outside-the-globs'), 'deployed');
    assert.equal(laptop.calls, 0);

    // The same laptop by a name the globs allow: followed.
    await client.patch(`${leases}/${devSessionLeaseName('billing')}`, 'merge', {
      metadata: { annotations: { 'causeway.dev/url': `http://localhost:${laptop.port}` } },
    });
    await logged(/calls of "billing" go to http:\/\/localhost:\d+ \(a dev session\)/);
    assert.equal(await handledBy('inside-the-globs'), 'laptop');
  });

  it('last no longer than the service allows, whatever they ask, and an Event tells when its calls go away and come back', async (t) => {
    const { client, namespace, deployed, laptop, start, handledBy } = await environment(t);
    const collection = functionServicesPath(namespace);
    await createFunctionService(namespace, 'billing', {
      url: deployed.url,
      scope: SCOPE,
      devSessions: { allowed: true, urls: ['http://127.0.0.1:*'], maxSeconds: 5 },
    });
    // Its URL is on this host.
    await start({ functionServices: true, settings: { calls: { allowLoopback: true } } });
    const status = (what: string, test: (status: Record<string, unknown>) => boolean) =>
      eventually(what, async () => {
        const { status } = await client.get<KubernetesObject>(`${collection}/billing`);
        return status && test(status) ? status : undefined;
      });
    await status('the service Ready', (status) => status.phase === 'Ready');

    // Past Node's longest timer (2,147,483,647 ms), were it taken as it is asked.
    await client.patch(`${collection}/billing`, 'merge', {
      metadata: { annotations: { [DEV_SESSION_RENEWED]: new Date().toISOString() } },
      spec: {
        devSession: {
          url: laptop.url,
          revision: '1',
          holder: 'mallory@laptop',
          durationSeconds: 2 ** 31 - 1,
        },
      },
    });
    await status('the session in the status', (status) => status.devSession !== undefined);
    assert.equal(await handledBy('during-the-session'), 'laptop');
    // Not renewed: it ends after the 5 s the service allows, and the calls come home.
    await status('the session ended', (status) => status.devSession === undefined);
    assert.equal(await handledBy('after-the-session'), 'deployed');

    const reasons = await eventually('the Events about the FunctionService', async () => {
      const { items } = await client.get<{ items: Array<{ reason: string; message: string }> }>(
        `/api/v1/namespaces/${namespace}/events?fieldSelector=involvedObject.kind=FunctionService,involvedObject.name=billing`,
      );
      return items.some((event) => event.reason === 'DevSessionEnded') ? items : undefined;
    });
    assert.deepEqual(reasons.map((event) => event.reason).sort(), ['DevSessionEnded', 'DevSessionStarted']);
    assert.match(
      reasons.find((event) => event.reason === 'DevSessionStarted')?.message ?? '',
      new RegExp(`the calls of "billing" go to http://127\\.0\\.0\\.1:${laptop.port}, a dev session's URL`),
    );
  });

  it('cannot take a service by a second FunctionService naming it: the older keeps it, the newer says why', async (t) => {
    const { client, namespace, deployed, laptop, start, handledBy, logged } = await environment(t);
    const collection = functionServicesPath(namespace);
    const create = (name: string, url: string) =>
      createFunctionService(namespace, name, { url, serviceName: 'billing', scope: SCOPE });
    // The older is listed last (by name), so the newer is the first the gateway sees.
    const older = await create('z-billing', deployed.url);
    const createdAt = String(older.metadata.creationTimestamp).slice(0, 19);
    await eventually('a later second on the apiserver clock', async () =>
      new Date().toISOString().slice(0, 19) > createdAt ? true : undefined,
    );
    await create('a-billing', laptop.url);
    await start({ functionServices: true, settings: { calls: { allowLoopback: true } } });

    const status = (name: string, phase: string) =>
      eventually(`${name} ${phase}`, async () => {
        const { status } = await client.get<KubernetesObject>(`${collection}/${name}`);
        return status?.phase === phase ? status : undefined;
      });
    const refused = await status('a-billing', 'Refused');
    assert.equal(
      refused.lastError,
      `serviceName "billing" is already that of FunctionService ${namespace}/z-billing, which is older: one service has one FunctionService`,
    );
    await status('z-billing', 'Ready');
    await logged(new RegExp(`FunctionService ${namespace}/a-billing is not served: serviceName "billing"`));
    assert.equal(await handledBy('while-both-exist'), 'deployed');
    assert.equal(laptop.calls, 0, 'the newer object was never called');

    // The older gone, the service is the newer one's.
    await client.request(`${collection}/z-billing`, { method: 'DELETE' });
    await status('a-billing', 'Ready');
    assert.equal(await handledBy('after-the-older'), 'laptop');
  });

  it('are allowed on the command line only as URL globs, for a service --functions gives', async () => {
    const refusals: Array<[string, string]> = [
      ['billing=https://*.ngrok.app?x', 'expects <name>=<url-glob>[,<url-glob>...]'],
      ['billing=https://mallory@*.ngrok.app', 'expects <name>=<url-glob>[,<url-glob>...]'],
      ['billing=file:///tmp/*', 'expects <name>=<url-glob>[,<url-glob>...]'],
      ['payroll=https://*.ngrok.app', 'names "payroll", which no --functions gives'],
    ];
    for (const [value, why] of refusals) {
      const gateway = causeway(
        ['gateway', '--functions', 'billing=http://127.0.0.1:8080', '--function-dev-sessions', value],
        process.env,
      );
      assert.equal(await gateway.exited(), 2, value);
      assert.ok(
        gateway.output().startsWith(`causeway gateway: --function-dev-sessions ${why}`),
        gateway.output(),
      );
    }
  });
});
