/**
 * `causeway rbac` on the real apiserver: the RBAC it prints for a gateway of examples/01-minimal,
 * applied, is all that gateway needs: run as a process holding only that ServiceAccount's token, it
 * handles a KopfExample, and is refused nothing on the way; without one of the rules its run uses,
 * it is refused. `causeway rbac --check`, run with that token, finds nothing missing then, and names
 * the rule removed otherwise. The gateway makes the same check of itself at start: without the rule,
 * it refuses to start, naming each permission missing, or warns with --rbac-check warn. With
 * --dev-sessions, the watch of their Leases is granted, checked at start, and needed.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { DEFAULT_IDENTITY } from '../../gateway/identity.ts';
import { devSessionLease } from '../../gateway/services/dev-sessions.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  applyRbac,
  type Manifest,
  type PolicyRule,
  writeServiceAccountKubeconfig,
} from '../support/kubectl.ts';
import { applyFile, createKopfExample, eventually, kubeClient } from '../support/operator.ts';
import { CAUSEWAY_CLI, causeway, serveOnLoopback } from '../support/processes.ts';
import { rbacObjects, refusal, withoutRule, withoutSecret } from '../support/rbac.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const EXAMPLE = 'examples/01-minimal/operator.ts';
const SCOPE = 'test/fixtures/kopfexample-scope.yaml';
const SECRET = 'a-secret-shared-by-the-gateway-and-its-service-0123456789';
const ACCOUNT = 'causeway-gateway';

/** `causeway rbac --check` with `args`, as the identity of `kubeconfig`: its exit code and report. */
async function rbacCheck(args: string[], kubeconfig: string): Promise<{ code: number; report: string }> {
  const env = { ...withoutSecret, KUBECONFIG: kubeconfig };
  try {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [CAUSEWAY_CLI, 'rbac', '--check', ...args],
      {
        cwd: ROOT,
        env,
      },
    );
    return { code: 0, report: stdout };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: unknown; stdout: string; stderr: string };
    assert.equal(typeof code, 'number', `causeway rbac --check did not exit: ${stderr}`);
    return { code: code as number, report: stdout };
  }
}

/**
 * A namespace with the example's function service running, the RBAC `causeway rbac` prints for a
 * gateway serving it there with `moreFlags` (not applied), and how to start that gateway with only
 * its account's token.
 */
async function minimalOperator(t: TestContext, moreFlags: (namespace: string) => string[] = () => []) {
  await applyFile(CRD);
  const namespace = await testNamespace(t);
  const directory = mkdtempSync(join(tmpdir(), 'causeway-rbac-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  const secretFile = join(directory, 'secret');
  writeFileSync(secretFile, SECRET);
  const { url } = await serveOnLoopback(t, EXAMPLE, ['--secret-file', secretFile], withoutSecret);
  // The gateway's own flags, given to both: what it serves, where, and where it peers.
  const gatewayFlags = [
    ...['--functions', `kopfexample=${url}`, '--function-scope', `kopfexample=${SCOPE}`],
    ...['--namespace', namespace, '--peering-namespace', namespace, '--secret-file', secretFile],
    ...moreFlags(namespace),
  ];
  const rbacFlags = [...gatewayFlags, '--service-account', `${namespace}/${ACCOUNT}`];
  const objects = await rbacObjects(rbacFlags);
  const kubeconfig = join(directory, 'kubeconfig');
  return {
    namespace,
    objects,
    /** `causeway rbac --check` of these flags, with the account's token. */
    async check() {
      await writeServiceAccountKubeconfig(kubeconfig, namespace, ACCOUNT);
      return rbacCheck(rbacFlags, kubeconfig);
    },
    /** `causeway gateway` with those flags (and `extraFlags`), holding only the account's token. */
    async startGateway(extraFlags: string[] = []) {
      await writeServiceAccountKubeconfig(kubeconfig, namespace, ACCOUNT);
      const env = { ...withoutSecret, KUBECONFIG: kubeconfig };
      const gateway = causeway(['gateway', ...gatewayFlags, ...extraFlags], env);
      t.after(() => gateway.stop());
      return gateway;
    },
  };
}

/** `objects` without the rule on `resource` of their `kind`. */
const withoutRuleOn = (objects: Manifest[], kind: 'Role' | 'ClusterRole', resource: string) =>
  withoutRule(objects, kind, (rule) => rule.resources?.includes(resource) ?? false);

/** What a gateway of the example lacks without the rule on leases: each verb of its peering. */
const leasesMissing = (namespace: string) =>
  ['get', 'list', 'create', 'update', 'delete'].map(
    (verb) => `missing: ${verb} leases.coordination.k8s.io in ${namespace}`,
  );
/** The lines of a `--check` report that start with `kind`. */
const linesOf = (report: string, kind: 'missing' | 'extra') =>
  report.split('\n').filter((line) => line.startsWith(`${kind}: `));

describe('causeway rbac', () => {
  it("grants a gateway of examples/01-minimal all it needs: holding only its account's token, it handles a KopfExample", async (t) => {
    const { namespace, objects, startGateway } = await minimalOperator(t);
    assert.deepEqual(
      objects.map((object) => `${object.kind}/${object.metadata.name}`),
      [
        `ServiceAccount/${ACCOUNT}`,
        `Role/${ACCOUNT}`,
        `RoleBinding/${ACCOUNT}`,
        `ClusterRole/${ACCOUNT}-${namespace}`,
        `ClusterRoleBinding/${ACCOUNT}-${namespace}`,
      ],
    );
    await applyRbac(t, objects);
    const gateway = await startGateway();

    const path = await createKopfExample(namespace, 'granted');
    const client = await kubeClient();
    const handled = await eventually(
      'status.create_fn',
      async () => {
        assert.doesNotMatch(gateway.output(), /[Ff]orbidden/, gateway.output()); // fail fast on a missing permission
        return (await client.get<{ status?: Record<string, unknown> }>(path)).status?.create_fn;
      },
      30_000,
    );
    assert.deepEqual(handled, { message: 'hello granted' });
    // It peered with that account (a Lease of its own where it was told), and stops cleanly.
    const leases = await client.get<{ items: unknown[] }>(
      `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
    );
    assert.ok(leases.items.length > 0, 'the gateway holds a Lease of peering');
    assert.equal(await gateway.stop(), 0, gateway.output());
    assert.doesNotMatch(gateway.output(), /[Ff]orbidden/, gateway.output());
  });

  // Events and the CRD's get are not in this list: the example's handler never fails (no Warning to
  // post), and a gateway refused the CRD assumes the status keeps its state, which it does here.
  // Started with --rbac-check warn: by default it would refuse to start, which shows only that the
  // check at start wants the rule; the apiserver's refusal shows that the run needs it.
  const needs = [
    { resource: 'kopfexamples', permission: 'list kopfexamples.kopf.dev' },
    { resource: 'kopfexamples/status', permission: 'patch kopfexamples.kopf.dev/status' },
    { resource: 'leases', permission: 'get leases.coordination.k8s.io' },
  ];
  for (const { resource, permission } of needs) {
    it(`prints no rule a run does not need: without the one on ${resource}, the gateway is refused`, async (t) => {
      const { namespace, objects, startGateway } = await minimalOperator(t);
      await applyRbac(t, withoutRuleOn(objects, 'Role', resource));
      await createKopfExample(namespace, 'refused'); // for the status patch

      const gateway = await startGateway(['--rbac-check', 'warn']);
      // It says what it lacks, and starts.
      const warning = (await gateway.waitFor(/starting anyway \(--rbac-check warn\): .*/, 30_000))[0];
      assert.ok(warning.includes(`${permission} in ${namespace}`), warning);
      // The apiserver's refusal names the verb and the resource: that rule, not another, was lacking.
      await gateway.waitFor(refusal('[a-z]+', resource), 30_000);
    });
  }

  describe('--dev-sessions', () => {
    // Dev sessions are Leases in the namespace given, here the one it peers in too.
    const devSessions = (namespace: string) => ['--dev-sessions', namespace];
    const devSessionLeases = (rule: PolicyRule) =>
      (rule.resources?.includes('leases') && rule.verbs.includes('watch')) ?? false;

    it("grants the gateway the watch of their Leases: holding only its account's token, it passes its check at start and runs", async (t) => {
      const { namespace, objects, startGateway } = await minimalOperator(t, devSessions);
      const role = objects.find((object) => object.kind === 'Role');
      const rules = (role?.rules as PolicyRule[] | undefined) ?? [];
      assert.deepEqual(rules.filter(devSessionLeases), [
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['list', 'watch'] },
      ]);
      await applyRbac(t, objects);
      const gateway = await startGateway(); // --rbac-check refuse, the default
      const path = await createKopfExample(namespace, 'granted');
      const client = await kubeClient();
      const handled = await eventually(
        'status.create_fn',
        async () => (await client.get<{ status?: Record<string, unknown> }>(path)).status?.create_fn,
        30_000,
      );
      assert.deepEqual(handled, { message: 'hello granted' });
      // It sees a session's Lease come: one for a service that allows none, which it says it ignores.
      const session = {
        service: 'kopfexample',
        url: 'http://127.0.0.1:1',
        revision: '1',
        holder: 'a-laptop',
      };
      await client.request(`/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`, {
        method: 'POST',
        body: devSessionLease(
          { ...session, durationSeconds: 60 },
          DEFAULT_IDENTITY.annotationPrefix,
          new Date(),
        ),
      });
      await gateway.waitFor(/the dev session of Lease \S+ for \\?"kopfexample\\?" is ignored/, 30_000);
      assert.equal(await gateway.stop(), 0, gateway.output());
      assert.doesNotMatch(gateway.output(), /[Ff]orbidden|not granted/, gateway.output());
    });

    it('prints no rule it does not need: without that one, the check at start names it and the apiserver refuses the watch of their Leases', async (t) => {
      const { namespace, objects, startGateway } = await minimalOperator(t, devSessions);
      await applyRbac(t, withoutRule(objects, 'Role', devSessionLeases));
      const gateway = await startGateway(['--rbac-check', 'warn']);
      const warning = (await gateway.waitFor(/starting anyway \(--rbac-check warn\): .*/, 30_000))[0];
      assert.ok(warning.includes(`watch leases.coordination.k8s.io in ${namespace}`), warning);
      // Peering's rule lists the Leases there too (so only the watch is missing), and never watches.
      await gateway.waitFor(refusal('watch', 'leases'), 30_000);
    });
  });

  describe('the check at start', () => {
    it('refuses to start without the rule on leases, naming each permission missing, before handling anything', async (t) => {
      const { namespace, objects, startGateway } = await minimalOperator(t);
      await applyRbac(t, withoutRuleOn(objects, 'Role', 'leases'));
      const path = await createKopfExample(namespace, 'not-handled');

      const gateway = await startGateway();
      assert.equal(await gateway.exited(), 1, gateway.output());
      const output = gateway.output();
      const missing = output.split('\n').filter((line) => line.trimStart().startsWith('missing: '));
      assert.deepEqual(
        missing.map((line) => line.trim()),
        leasesMissing(namespace),
        output,
      );
      assert.match(
        output,
        /`causeway rbac` with the same flags .*piped to `kubectl apply -f -`, grants them/,
      );
      // Nothing was handled, nor peered.
      const client = await kubeClient();
      const object = await client.get<{ status?: unknown; metadata: { finalizers?: string[] } }>(path);
      assert.equal(object.status, undefined, JSON.stringify(object));
      assert.equal(object.metadata.finalizers, undefined, JSON.stringify(object));
      assert.doesNotMatch(output, /[Ff]orbidden/, output);
    });

    it('starts when a handler names a resource the cluster does not serve yet, saying its rights there are not checked', async (t) => {
      await applyFile(CRD);
      const namespace = await testNamespace(t);
      const module = 'test/fixtures/not-yet-served-operator.ts';
      const gateway = causeway(['run', module, '--namespace', namespace, '--standalone'], process.env);
      t.after(() => gateway.stop());
      await gateway.waitFor(
        /handler "latecomer_fn" names latecomers\.not-yet-served\.example\.com, which the cluster does not serve yet: its rights on it are not checked/,
      );
      const path = await createKopfExample(namespace, 'served');
      const client = await kubeClient();
      const handled = await eventually('status.create_fn', async () => {
        return (await client.get<{ status?: Record<string, unknown> }>(path)).status?.create_fn;
      });
      assert.deepEqual(handled, { message: 'hello served' });
    });

    it('starts with --rbac-check off, and checks nothing', async (t) => {
      const { objects, startGateway } = await minimalOperator(t);
      await applyRbac(t, withoutRuleOn(objects, 'Role', 'leases'));

      const gateway = await startGateway(['--rbac-check', 'off']);
      // Unchecked, it runs into the apiserver's refusal of its peering.
      await gateway.waitFor(refusal('[a-z]+', 'leases'), 30_000);
      assert.doesNotMatch(gateway.output(), /not granted/, gateway.output());
    });
  });

  describe("--check, with the account's token", () => {
    it('finds nothing missing with the RBAC it prints applied, and exits 0', async (t) => {
      const { namespace, objects, check } = await minimalOperator(t);
      await applyRbac(t, objects);
      // The authorizer reads RBAC from a cache: until it has all the rules, some are reported missing.
      const { report } = await eventually('every rule granted', async () => {
        const checked = await check();
        return checked.code === 0 ? checked : undefined;
      });
      assert.deepEqual(linesOf(report, 'missing'), [], report);
      assert.deepEqual(linesOf(report, 'extra'), [], report);
      assert.match(report, /^granted: all \d+ permissions of the rules$/m);
      assert.match(report, new RegExp(`^checked as: system:serviceaccount:${namespace}:${ACCOUNT}$`, 'm'));
    });

    const removals: Array<{
      kind: 'Role' | 'ClusterRole';
      resource: string;
      missing: (namespace: string) => string[];
    }> = [
      {
        kind: 'Role',
        resource: 'leases',
        missing: leasesMissing,
      },
      {
        kind: 'ClusterRole',
        resource: 'customresourcedefinitions',
        missing: () => [
          'missing: get customresourcedefinitions.apiextensions.k8s.io "kopfexamples.kopf.dev" cluster-wide',
        ],
      },
    ];
    for (const { kind, resource, missing } of removals) {
      it(`names the rule on ${resource} removed from the ${kind}, and exits 1`, async (t) => {
        const { namespace, objects, check } = await minimalOperator(t);
        await applyRbac(t, withoutRuleOn(objects, kind, resource));
        const expected = missing(namespace);
        // Once the authorizer has the rules applied, what is missing is that rule's, and only it.
        const { code, report } = await eventually(`only ${resource} missing`, async () => {
          const checked = await check();
          return linesOf(checked.report, 'missing').length === expected.length ? checked : undefined;
        });
        assert.deepEqual(linesOf(report, 'missing'), expected, report);
        assert.equal(code, 1, report);
      });
    }
  });
});
