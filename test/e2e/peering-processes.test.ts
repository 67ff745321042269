/**
 * Peering as users run it: `causeway run` processes of one operator in one peering namespace. The
 * leader is killed with SIGKILL mid-backlog: the other takes over once its Lease expires and finishes,
 * no object is handled by both at once, and the only repeats are calls in flight at the kill, with the
 * same idempotency key. `causeway freeze` pauses them all, `causeway resume` lets them go on. A
 * gateway without the rights peering needs says which at its start.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testCluster, testNamespace } from '../support/cluster.ts';
import { writeServiceAccountKubeconfig } from '../support/kubectl.ts';
import {
  applyFile,
  createKopfExamples,
  createResults,
  eventually,
  kubeClient,
  objectNames,
} from '../support/operator.ts';
import { type CliProcess, causeway } from '../support/processes.ts';

const MODULE = 'test/fixtures/peer-log-operator.ts';
const OBJECTS = 500;
/** The lease's duration (15 s) and a look (2 s), with room for the new leader's first list. */
const TAKEOVER_BOUND_MS = 20_000;

interface Call {
  gateway: string;
  name: string;
  key: string;
  started: number;
  /** Undefined for a call the kill cut. */
  ended?: number;
}

/** What the fixture recorded, one per line: the event, the gateway, the object, a key and when. */
function linesIn(
  path: string,
): Array<{ event: string; gateway: string; name: string; key: string; at: number }> {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [event, gateway, name, key, at] = line.split(' ') as [string, string, string, string, string];
      return { event, gateway, name, key, at: Number(at) };
    });
}

/** The create handler's calls. */
function callsIn(path: string): Call[] {
  const calls = new Map<string, Call>();
  for (const { event, gateway, name, key, at } of linesIn(path)) {
    const id = `${gateway} ${name} ${key}`;
    if (event === 'start') calls.set(id, { gateway, name, key, started: at });
    else if (event === 'end') (calls.get(id) as Call).ended = at;
  }
  return [...calls.values()];
}

describe('peering between processes', () => {
  it('hands over from a leader killed with SIGKILL within the lease, with no object handled by both', async (t) => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    const namespace = await testNamespace(t);
    const logPath = join(mkdtempSync(join(tmpdir(), 'causeway-peering-')), 'calls.log');
    writeFileSync(logPath, '');
    const { kubeconfigPath } = await testCluster();
    const start = (id: string): CliProcess => {
      const env = {
        ...process.env,
        KUBECONFIG: kubeconfigPath,
        CAUSEWAY_CALL_LOG: logPath,
        POD_NAME: id,
      };
      const args = ['run', MODULE, '-n', namespace, '--peering-namespace', namespace, '--concurrency', '8'];
      return causeway(args, env);
    };
    const first = start('first');
    t.after(() => first.stop('SIGKILL'));
    await first.waitFor(/leads the 1 gateway/);
    const second = start('second');
    t.after(() => second.stop());
    await second.waitFor(/follows "first"/);

    const names = objectNames('kex', OBJECTS);
    await createKopfExamples(namespace, names);
    await eventually('the leader well into the backlog', async () =>
      callsIn(logPath).length >= 150 ? true : undefined,
    );
    process.kill(first.child.pid as number, 'SIGKILL');
    const killedAt = Date.now();
    assert.equal(await first.exited(), 'SIGKILL');
    const handled = await eventually(
      `status.create_fn on all ${OBJECTS} objects`,
      async () => {
        const found = await createResults(namespace);
        return found.size === OBJECTS ? found : undefined;
      },
      60_000,
    );

    const calls = callsIn(logPath);
    const byFirst = calls.filter((call) => call.gateway === 'first');
    const bySecond = calls.filter((call) => call.gateway === 'second');
    const tookOver = Math.min(...bySecond.map((call) => call.started)) - killedAt;
    t.diagnostic(
      `first: ${byFirst.length} calls, second: ${bySecond.length}; took over ${tookOver} ms after the kill`,
    );
    assert.ok(tookOver >= 0, 'the second gateway called nothing while the first led');
    assert.ok(tookOver <= TAKEOVER_BOUND_MS, `took over within ${TAKEOVER_BOUND_MS} ms`);
    assert.deepEqual(
      [...new Set(calls.map((call) => call.name))].sort(),
      [...names].sort(),
      'every object was called',
    );
    const byName = Map.groupBy(calls, (call) => call.name);
    const repeated = [...byName].filter(([, ofName]) => ofName.length > 1);
    t.diagnostic(`${repeated.length} objects called twice`);
    assert.ok(repeated.length <= 8, 'no more repeats than calls in flight at once (--concurrency 8)');
    for (const [name, [before, after, ...more]] of repeated) {
      assert.deepEqual(more, [], `${name} was called at most twice`);
      // In flight at the kill: called, and its result not written yet (the handler may have returned).
      assert.equal(before?.gateway, 'first', `${name}: a repeat is of a call of the killed gateway`);
      assert.ok(
        (before?.started ?? Infinity) < killedAt,
        `${name}: only a call made before the kill is repeated`,
      );
      assert.equal(after?.gateway, 'second', `${name}: repeated by the gateway that took over`);
      assert.equal(after?.key, before?.key, `${name}: the repeat has the same idempotency key`);
    }
    for (const [name, result] of handled) {
      const last = byName.get(name)?.at(-1);
      assert.deepEqual(result, { by: last?.gateway }, `${name}'s result is its last call's`);
    }
  });

  it('shares 1,200 objects among three --sharding gateways; one killed with SIGKILL and a fourth started, none is dropped or handled by two at once', async (t) => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    const namespace = await testNamespace(t);
    const logPath = join(mkdtempSync(join(tmpdir(), 'causeway-sharding-')), 'calls.log');
    writeFileSync(logPath, '');
    const { kubeconfigPath } = await testCluster();
    const start = (id: string): CliProcess => {
      const env = { ...process.env, KUBECONFIG: kubeconfigPath, CAUSEWAY_CALL_LOG: logPath, POD_NAME: id };
      const args = [
        'run',
        MODULE,
        '-n',
        namespace,
        '--peering-namespace',
        namespace,
        '--sharding',
        '--concurrency',
        '8',
      ];
      const gateway = causeway(args, env);
      t.after(() => gateway.stop('SIGKILL'));
      return gateway;
    };
    const gateways = ['shard-a', 'shard-b', 'shard-c'].map(start);
    await Promise.all(gateways.map((gateway) => gateway.waitFor(/a 1\/3 share/)));
    // Enough for calls in flight on every gateway at the kill; bench:sharding measures the scale.
    const count = 1200;
    const names = objectNames('kex', count);
    await createKopfExamples(namespace, names);
    await eventually('a part of the backlog handled', async () =>
      callsIn(logPath).length >= count / 5 ? true : undefined,
    );
    const [, killed] = gateways as [CliProcess, CliProcess, CliProcess];
    process.kill(killed.child.pid as number, 'SIGKILL');
    const killedAt = Date.now();
    assert.equal(await killed.exited(), 'SIGKILL');
    start('shard-d');
    await eventually(
      `status.create_fn on all ${count} objects`,
      async () => ((await createResults(namespace)).size === count ? true : undefined),
      120_000,
    );

    const calls = callsIn(logPath);
    assert.deepEqual(
      [...new Set(calls.map((call) => call.name))].sort(),
      [...names].sort(),
      'every object was called',
    );
    const shares = Map.groupBy(calls, (call) => call.gateway);
    t.diagnostic([...shares].map(([id, of]) => `${id}: ${of.length}`).join(', '));
    assert.ok((shares.get('shard-d')?.length ?? 0) > 0, 'the gateway that joined took a share');
    const byName = Map.groupBy(calls, (call) => call.name);
    const repeated = [...byName].filter(([, ofName]) => ofName.length > 1);
    t.diagnostic(`${repeated.length} objects called twice`);
    assert.ok(repeated.length <= 8, 'no more repeats than calls in flight at once on the killed gateway');
    for (const [name, [before, after, ...more]] of repeated) {
      assert.deepEqual(more, [], `${name} was called at most twice`);
      assert.equal(before?.gateway, 'shard-b', `${name}: a repeat is of a call of the killed gateway`);
      assert.ok(
        (before?.started ?? Infinity) < killedAt,
        `${name}: only a call made before the kill is repeated`,
      );
      assert.ok((after?.started ?? 0) > killedAt, `${name}: repeated after the kill, not alongside`);
      assert.equal(after?.key, before?.key, `${name}: the repeat has the same idempotency key`);
    }
  });

  it('pauses the deployed gateway while a --dev one runs, timers and daemons too, and resumes when the dev one is killed', async (t) => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    const namespace = await testNamespace(t);
    const logPath = join(mkdtempSync(join(tmpdir(), 'causeway-dev-peering-')), 'calls.log');
    writeFileSync(logPath, '');
    const { kubeconfigPath } = await testCluster();
    const start = (id: string, flags: string[]): CliProcess => {
      const env = { ...process.env, KUBECONFIG: kubeconfigPath, CAUSEWAY_CALL_LOG: logPath, POD_NAME: id };
      const gateway = causeway(
        ['run', MODULE, '-n', namespace, '--peering-namespace', namespace, ...flags],
        env,
      );
      t.after(() => gateway.stop('SIGKILL'));
      return gateway;
    };
    const of = (event: string, gateway: string, after = 0) =>
      linesIn(logPath).filter((line) => line.event === event && line.gateway === gateway && line.at > after);
    const deployed = start('deployed', []);
    await deployed.waitFor(/leads the 1 gateway/);
    await (await kubeClient()).request(`/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`, {
      method: 'POST',
      body: {
        apiVersion: 'kopf.dev/v1',
        kind: 'KopfExample',
        metadata: { name: 'ticking', labels: { ticking: 'yes' } },
        spec: { field: 'x' },
      },
    });
    await eventually('the deployed gateway ticking, its daemon running', async () =>
      of('tick', 'deployed').length >= 3 && of('daemon-start', 'deployed').length === 1 ? true : undefined,
    );

    const laptop = start('laptop', ['--dev']);
    await deployed.waitFor(/paused by a higher priority \(666\)/);
    await eventually('the laptop ticking, its daemon running', async () =>
      of('tick', 'laptop').length >= 3 && of('daemon-start', 'laptop').length === 1 ? true : undefined,
    );
    const [laptopDaemon] = of('daemon-start', 'laptop');
    const firstLaptopTick = Math.min(...of('tick', 'laptop').map((line) => line.at));
    const [deployedDaemonEnd] = of('daemon-end', 'deployed');
    assert.ok(deployedDaemonEnd, "the deployed gateway's daemon was stopped");
    assert.ok(
      deployedDaemonEnd.at < (laptopDaemon?.at ?? 0),
      "the deployed daemon ended before the laptop's began",
    );
    assert.deepEqual(
      of('tick', 'deployed', firstLaptopTick),
      [],
      'the paused gateway ran no timer once the laptop did',
    );

    process.kill(laptop.child.pid as number, 'SIGKILL');
    const killedAt = Date.now();
    assert.equal(await laptop.exited(), 'SIGKILL');
    await eventually(
      'the deployed gateway ticking again',
      async () => (of('tick', 'deployed', killedAt).length >= 2 ? true : undefined),
      30_000,
    );
    const handedBack = Math.min(...of('tick', 'deployed', killedAt).map((line) => line.at)) - killedAt;
    t.diagnostic(`the deployed gateway ran again ${handedBack} ms after the kill of the dev one`);
    assert.ok(handedBack >= 0 && handedBack < 20_000, 'within the Lease and a look');
    assert.equal(of('daemon-start', 'deployed', killedAt).length, 1, 'its daemon started again');
  });

  it('pauses with causeway freeze, saying why, and goes on with causeway resume', async (t) => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    const namespace = await testNamespace(t);
    const logPath = join(mkdtempSync(join(tmpdir(), 'causeway-freeze-')), 'calls.log');
    writeFileSync(logPath, '');
    const env = {
      ...process.env,
      KUBECONFIG: (await testCluster()).kubeconfigPath,
      CAUSEWAY_CALL_LOG: logPath,
      POD_NAME: 'deployed',
    };
    const gateway = causeway(['run', MODULE, '-n', namespace, '--peering-namespace', namespace], env);
    t.after(() => gateway.stop());
    await gateway.waitFor(/leads the 1 gateway/);

    const freeze = causeway(
      ['freeze', '--peering-namespace', namespace, '--message', 'migrating the CRD', '--wait', '30'],
      env,
    );
    assert.equal(await freeze.exited(), 0, freeze.output());
    assert.match(freeze.output(), /^frozen: 1 gateway\(s\) paused \(deployed\)$/m);
    await gateway.waitFor(/paused: peering is frozen by .+: migrating the CRD/);
    const client = await kubeClient();
    const lease = await client.get<KubernetesObject>(
      `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/causeway.dev.freeze`,
    );
    assert.match(String(lease.spec?.holderIdentity), /^frozen by .+: migrating the CRD$/);

    await createKopfExamples(namespace, objectNames('kex', 3));
    // The freeze cannot end before the command that ends it starts, a second or more after the objects
    // were created: a gateway not paused would have called them by then.
    const resumedFrom = Date.now();
    const resume = causeway(['resume', '--peering-namespace', namespace], env);
    assert.equal(await resume.exited(), 0, resume.output());
    assert.match(resume.output(), /^resumed$/m);
    await eventually('the objects handled after the resume', async () =>
      (await createResults(namespace)).size === 3 ? true : undefined,
    );
    const calls = callsIn(logPath);
    assert.equal(calls.length, 3);
    for (const call of calls) {
      assert.ok(call.started >= resumedFrom, `${call.name} was called while frozen`);
    }
  });

  it('stops at its start when it may not keep Leases, naming the rights and --standalone', async (t) => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}`;
    await client.request(`/api/v1/namespaces/${namespace}/serviceaccounts`, {
      method: 'POST',
      body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'no-leases' } },
    });
    await client.request(`${rbac}/roles`, {
      method: 'POST',
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'no-leases' },
        rules: [
          { apiGroups: ['kopf.dev'], resources: ['kopfexamples'], verbs: ['get', 'list', 'watch', 'patch'] },
        ],
      },
    });
    await client.request(`${rbac}/rolebindings`, {
      method: 'POST',
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'no-leases' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'no-leases' },
        subjects: [{ kind: 'ServiceAccount', name: 'no-leases', namespace }],
      },
    });
    const kubeconfig = join(mkdtempSync(join(tmpdir(), 'causeway-no-leases-')), 'kubeconfig');
    // Its context names the namespace: peering's Leases are looked for there.
    await writeServiceAccountKubeconfig(kubeconfig, namespace, 'no-leases');
    // Past the check at start, which would refuse first (--rbac-check warn): peering's own refusal is
    // what a gateway whose rights were taken away after the check meets.
    const gateway = causeway(['run', MODULE, '-n', namespace, '--rbac-check', 'warn'], {
      ...process.env,
      KUBECONFIG: kubeconfig,
      CAUSEWAY_CALL_LOG: '/dev/null',
      POD_NAME: 'no-leases',
    });
    t.after(() => gateway.stop());
    assert.equal(await gateway.exited(), 1, gateway.output());
    assert.match(gateway.output(), new RegExp(`get leases.coordination.k8s.io in ${namespace}`));
    assert.match(
      gateway.output(),
      new RegExp(
        `peering needs to get, list, create, update and delete Leases \\(coordination.k8s.io\\) in namespace ${namespace}: grant them to the gateway, or run it alone with --standalone`,
      ),
    );
  });
});
