/**
 * `causeway explain`, run as a user runs it (the CLI, a kubeconfig), on objects a gateway left in each
 * state: handled, retrying, failed for good, filtered out, held in deletion; with the handlers read
 * from an operator module (--module) and from a service over HTTP (--functions), and the replica that
 * owns the objects read from the gateway's peering Lease.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { serveFetch } from '../../gateway/cli/commands/serve/serve.ts';
import type { Explanation } from '../../gateway/explain/explanation.ts';
import { DEFAULT_IDENTITY } from '../../gateway/identity.ts';
import { applyManifests } from '../../gateway/kube/apply.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import { functionServiceDefinition } from '../../gateway/services/function-service-objects.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testCluster, testNamespace } from '../support/cluster.ts';
import explained from '../support/explain-operator.ts';
import {
  applyFile,
  createFunctionService,
  createKopfExample,
  eventually,
  kubeClient,
  progressOf,
  type RunningOperator,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';
import { CAUSEWAY_CLI } from '../support/processes.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const MODULE = 'test/support/explain-operator.ts';
const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const { statusKey, finalizer } = DEFAULT_IDENTITY;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('causeway explain', () => {
  let client: KubeClient;
  let namespace: string;
  let operator: RunningOperator;
  let service: Awaited<ReturnType<typeof serveFetch>>;
  let env: NodeJS.ProcessEnv;

  /** The CLI as users run it: stdout and stderr apart, and the exit code. */
  function causewayExplain(args: string[]): Promise<Run> {
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        [CAUSEWAY_CLI, 'explain', ...args],
        { cwd: ROOT, env },
        (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
      );
    });
  }

  async function explainJson(name: string, source: string[] = ['--module', MODULE]): Promise<Explanation> {
    const run = await causewayExplain([
      `kopfexamples/${name}`,
      '-n',
      namespace,
      '-o',
      'json',
      '--peering-namespace',
      namespace,
      ...source,
    ]);
    assert.equal(run.code, 0, run.stderr);
    return JSON.parse(run.stdout) as Explanation;
  }

  const path = (name: string) => `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/${name}`;
  const read = (name: string) => client.get<KubernetesObject>(path(name));
  const state = (object: KubernetesObject) =>
    object.status?.[statusKey] as { essence?: string; progress?: Record<string, unknown> } | undefined;
  const handler = (explanation: Explanation, id: string) => {
    const found = explanation.handlers.find((each) => each.id === id);
    assert.ok(found, `handler ${id} is explained`);
    return found;
  };

  before(async () => {
    // The module verifies the calls of the gateway (over HTTP here) with this secret; the CLI signs with it.
    process.env.CAUSEWAY_SECRET = TEST_SECRET;
    env = { ...process.env, KUBECONFIG: (await testCluster()).kubeconfigPath, CAUSEWAY_SECRET: TEST_SECRET };
    await applyFile(CRD);
    client = await kubeClient();
    namespace = await testNamespace();
    operator = await runOperator(explained, { namespaces: [namespace], peering: { namespace } });
    service = await serveFetch(explained, { port: 0, host: '127.0.0.1' });
    // The same service named by a FunctionService, as a gateway given --function-services would find it.
    await applyManifests(client, [functionServiceDefinition()], { fieldManager: 'causeway-tests' });
    await createFunctionService(namespace, 'explained', { url: service.url });
    await createKopfExample(namespace, 'done', { mode: 'ok' });
    await createKopfExample(namespace, 'retrying', { mode: 'retry' });
    await createKopfExample(namespace, 'failing', { mode: 'fail' });
    await createKopfExample(namespace, 'filtered', { mode: 'ok' }, { labels: { app: 'db' } });
    await createKopfExample(namespace, 'deleting', { mode: 'stuck' });
  });

  after(async () => {
    await operator?.stop();
    await service?.close();
    // Let the object held in deletion go, or its namespace would never end.
    const held = await read('deleting').catch(() => undefined);
    const index = held?.metadata.finalizers?.indexOf(finalizer) ?? -1;
    if (held && index >= 0)
      await client.patch(path('deleting'), 'json', [{ op: 'remove', path: `/metadata/finalizers/${index}` }]);
    await client.request(`/api/v1/namespaces/${namespace}`, { method: 'DELETE' });
  });

  it('explains a handled object: nothing to do, its result, the finalizer its delete handler holds, its owner', async () => {
    await eventually('done handled', async () => {
      const object = await read('done');
      return object.status?.create_fn !== undefined && !state(object)?.progress ? true : undefined;
    });
    const explanation = await explainJson('done');
    assert.equal(explanation.apiVersion, 'causeway.dev/v1');
    assert.equal(explanation.kind, 'Explanation');
    assert.deepEqual(
      { ...explanation.object, uid: undefined, resourceVersion: undefined },
      {
        resource: 'kopfexamples.kopf.dev',
        namespace,
        name: 'done',
        uid: undefined,
        resourceVersion: undefined,
        deleting: false,
      },
    );
    assert.equal(explanation.cause, 'none');
    assert.deepEqual(explanation.state, { in: 'status', handled: true });
    assert.deepEqual(explanation.finalizer, { name: finalizer, present: true, needed: true });
    const create = handler(explanation, 'create_fn');
    assert.deepEqual(
      [create.service, create.match, create.status, create.due, create.resultKey, create.hasResult],
      ['explained', 'matched', 'idle', false, 'status.create_fn', true],
    );
    assert.equal(handler(explanation, 'delete_fn').holdsFinalizer, true);
    const owner = explanation.owner;
    assert.ok(owner?.replica, 'the gateway that leads owns it');
    assert.deepEqual(owner, { replica: owner.replica, sharding: false, members: [owner.replica] });
  });

  it('explains a handler retrying: its retries, next attempt and message, in JSON and in text', async () => {
    await eventually(
      'retrying retried',
      async () => progressOf(await read('retrying'), 'explained', statusKey)?.create_fn,
    );
    const explanation = await explainJson('retrying');
    assert.equal(explanation.cause, 'create');
    assert.deepEqual(explanation.state, { in: 'status', handled: false });
    const create = handler(explanation, 'create_fn');
    assert.deepEqual([create.status, create.concerned, create.due], ['retrying', true, false]);
    assert.equal(create.progress?.retries, 1);
    assert.equal(create.progress?.message, 'the backend is not ready');
    const nextAttempt = Date.parse(create.progress?.nextAttempt ?? '');
    assert.ok(
      nextAttempt > Date.now() + 3000_000,
      `next attempt in about an hour: ${create.progress?.nextAttempt}`,
    );
    assert.equal(handler(explanation, 'web_only').status, 'filtered');

    const text = await causewayExplain([`kopfexamples/retrying`, '-n', namespace, '--module', MODULE]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`^kopfexamples\\.kopf\\.dev ${namespace}/retrying\\n`));
    assert.match(text.stdout, /cause: +create\n/);
    assert.match(
      text.stdout,
      /create_fn +create +explained +retrying +matched +1 +\S+Z +status\.create_fn \(none yet\)/,
    );
    assert.match(text.stdout, /create_fn: last message: the backend is not ready/);
  });

  it('explains a permanent failure by the event the gateway posted, once the change is recorded as handled', async () => {
    await eventually('failing recorded', async () => state(await read('failing'))?.essence);
    const explanation = await eventually('the failure explained', async () => {
      const each = await explainJson('failing');
      return handler(each, 'create_fn').lastEvent ? each : undefined;
    });
    assert.equal(explanation.cause, 'none');
    const create = handler(explanation, 'create_fn');
    assert.equal(create.hasResult, false);
    assert.deepEqual(
      [create.lastEvent?.reason, create.lastEvent?.message],
      ['HandlerFailed', 'create_fn failed permanently: the spec cannot be served'],
    );
  });

  it('explains handlers filtered out: the label that fails, and a when callback left to the service; from a module, --functions and --function-services alike', async () => {
    await eventually('filtered handled', async () => (await read('filtered')).status?.create_fn);
    for (const source of [
      ['--module', MODULE],
      ['--functions', `explained=${service.url}`],
      ['--function-services', namespace],
    ]) {
      const explanation = await explainJson('filtered', source);
      const webOnly = handler(explanation, 'web_only');
      assert.deepEqual(
        [webOnly.match, webOnly.filter, webOnly.reason, webOnly.status],
        ['filtered', 'labels', 'label app: wants "web", has "db"', 'filtered'],
        source.join(' '),
      );
      const chosen = handler(explanation, 'chosen_fn');
      assert.equal(chosen.match, 'callback', source.join(' '));
      assert.match(chosen.reason ?? '', /cannot be evaluated offline/);
      assert.equal(handler(explanation, 'create_fn').match, 'matched');
      assert.deepEqual(
        explanation.handlers.map((each) => each.id),
        ['create_fn', 'web_only', 'chosen_fn', 'delete_fn'],
        'each handler once, from the one source',
      );
    }
  });

  it('explains an object held in deletion: its delete handler retrying, the finalizer kept for it', async () => {
    await eventually('deleting handled', async () => (await read('deleting')).status?.create_fn);
    await client.request(path('deleting'), { method: 'DELETE' });
    await eventually(
      'the delete handler retrying',
      async () => progressOf(await read('deleting'), 'explained', statusKey)?.delete_fn,
    );
    const explanation = await explainJson('deleting');
    assert.equal(explanation.cause, 'delete');
    assert.equal(explanation.object.deleting, true);
    assert.deepEqual(explanation.finalizer, { name: finalizer, present: true, needed: true });
    const remove = handler(explanation, 'delete_fn');
    assert.deepEqual(
      [
        remove.status,
        remove.holdsFinalizer,
        remove.progress?.retries,
        remove.progress?.message,
        remove.resultKey,
      ],
      ['retrying', true, 1, 'the cleanup is still running', undefined],
    );
    assert.equal(handler(explanation, 'create_fn').status, 'idle');
  });

  it('exits 1 with a clear message for an object that is not there, or a resource discovery does not know', async () => {
    const missing = await causewayExplain(['kopfexamples/nowhere', '-n', namespace, '--module', MODULE]);
    assert.equal(missing.code, 1);
    assert.match(
      missing.stderr,
      new RegExp(`kopfexamples.kopf.dev "nowhere" not found in namespace ${namespace}`),
    );
    assert.equal(missing.stdout, '');
    const unknown = await causewayExplain(['frobnicators/one', '--module', MODULE]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no resource "frobnicators" in API discovery/);
  });

  it('reads the handlers of a module it cannot load as an error, not an explanation', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'causeway-explain-'));
    writeFileSync(join(directory, 'empty.mjs'), 'export const nothing = 1;\n');
    const run = await causewayExplain([
      'kopfexamples/done',
      '-n',
      namespace,
      '--module',
      join(directory, 'empty.mjs'),
    ]);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /has no default export with a fetch method/);
  });
});
