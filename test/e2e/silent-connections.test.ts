/**
 * Silent connections: `causeway run` reaches the apiserver through a TCP proxy that first stalls its
 * connections (open, nothing passing either way, as behind a hung load balancer), then cuts them
 * mid-stream. The objects created after each are all handled, each exactly once: after the stall
 * within the liveness bound (the HTTP/2 session's PING unanswered), said in one line of the log;
 * after the cut at once. The same through an HTTP proxy, as a kubeconfig's `proxy-url` names one,
 * whose CONNECT tunnels stall, then are cut.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { writeKubeconfig } from '../../deploy/control-plane/kubeconfig.ts';
import { DEFAULT_LIVENESS } from '../../gateway/kube/liveness.ts';
import { testCluster, testNamespace } from '../support/cluster.ts';
import { sample, samples } from '../support/metrics.ts';
import {
  applyFile,
  createKopfExamples,
  createResults,
  eventually,
  objectNames,
} from '../support/operator.ts';
import { causeway } from '../support/processes.ts';
import { startStallingProxy } from '../support/stalling-proxy.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
/** At most this long after the last PING answered, the session is taken for dead. */
const BOUND_MS = DEFAULT_LIVENESS.pingIntervalMs + DEFAULT_LIVENESS.pingTimeoutMs;
/** For the watches to open again, and the objects to be called and patched. */
const HANDLING_MS = 5_000;
const SILENT_LINE = /fell silent \(no answer to PING for/;
/** The lines at warning level (the text format's) of what the gateway printed from `from` on. */
const warningsIn = (output: string, from: number) =>
  output
    .slice(from)
    .split('\n')
    .filter((line) => / WARNING /.test(line));

/**
 * Runs the gateway through the proxy (as its apiserver, or as the HTTP proxy of its kubeconfig's
 * `proxy-url` when `tunnel`), stalls its connections, then cuts them; checks what the description
 * of this file says.
 */
async function stalledThenCut(t: TestContext, { tunnel }: { tunnel: boolean }): Promise<void> {
  await applyFile(CRD);
  const namespace = await testNamespace(t);
  const proxy = await startStallingProxy(await testCluster(), { tunnel });
  t.after(() => proxy.close());
  const directory = mkdtempSync(join(tmpdir(), 'causeway-silent-'));
  const kubeconfig = join(directory, 'kubeconfig');
  await writeKubeconfig(kubeconfig, proxy.target);
  const callLog = join(directory, 'calls.log');
  writeFileSync(callLog, '');

  const run = causeway(
    [
      'run',
      'test/fixtures/call-log-operator.ts',
      '--standalone',
      '--namespace',
      namespace,
      '--metrics',
      '127.0.0.1:0',
    ],
    { ...process.env, KUBECONFIG: kubeconfig, CAUSEWAY_CALL_LOG: callLog },
  );
  t.after(() => run.stop());
  const metrics = (await run.waitFor(/metrics at (http:\/\/\S+)/))[1] as string;
  await run.waitFor(/watching .*path=\/apis\/kopf.dev\/v1\/namespaces\//);
  const restarts = async () =>
    sample(samples(await (await fetch(metrics)).text()), 'causeway_watch_restarts_total', {
      resource: 'kopfexamples.kopf.dev/v1',
    });
  /** Waits until `names` are all the objects handled; how long since `since`. */
  const allHandled = async (names: readonly string[], since: number, timeoutMs: number) => {
    await eventually(
      `${names.length} objects handled`,
      async () => ((await createResults(namespace)).size === names.length ? true : undefined),
      timeoutMs,
    ).catch((error: Error) => assert.fail(`${error.message}; the gateway said:\n${run.output()}`));
    return performance.now() - since;
  };

  const before = objectNames('before', 3);
  await createKopfExamples(namespace, before);
  await allHandled(before, performance.now(), 15_000);
  const restartsBefore = await restarts();

  const stalledAt = performance.now();
  const saidBeforeStall = run.output().length;
  proxy.stall();
  const stalled = objectNames('stalled', 10);
  await createKopfExamples(namespace, stalled);
  const afterStallMs = await allHandled([...before, ...stalled], stalledAt, BOUND_MS + HANDLING_MS);
  assert.ok(
    afterStallMs >= DEFAULT_LIVENESS.pingTimeoutMs && afterStallMs <= BOUND_MS + HANDLING_MS,
    `handled ${afterStallMs} ms after the stall: after a PING went unanswered, within the bound`,
  );
  const stallWarnings = warningsIn(run.output(), saidBeforeStall);
  assert.equal(stallWarnings.length, 1, stallWarnings.join('\n'));
  assert.match(stallWarnings[0] as string, SILENT_LINE);
  assert.ok((await restarts()) > restartsBefore, 'the watch was restarted');

  const cutAt = performance.now();
  proxy.cut();
  const cut = objectNames('cut', 10);
  await createKopfExamples(namespace, cut);
  const afterCutMs = await allHandled([...before, ...stalled, ...cut], cutAt, HANDLING_MS);
  assert.ok(afterCutMs <= HANDLING_MS, `handled ${afterCutMs} ms after the cut`);
  const silentLines = run
    .output()
    .split('\n')
    .filter((line) => SILENT_LINE.test(line));
  assert.equal(silentLines.length, 1, 'a cut is no silence: a closed connection is found at once');

  const calls = readFileSync(callLog, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' ')[0]);
  assert.deepEqual(calls.sort(), [...before, ...stalled, ...cut].sort(), 'each object called once');
  t.diagnostic(
    `handled ${(afterStallMs / 1000).toFixed(1)} s after the stall (bound ${BOUND_MS / 1000} s), ` +
      `${(afterCutMs / 1000).toFixed(1)} s after the cut; the gateway said: ${stallWarnings[0]}`,
  );
}

describe('silent connections to the apiserver', () => {
  it('handles every object created after a stall within the bound, saying so once, and after a cut at once', (t) =>
    stalledThenCut(t, { tunnel: false }));

  it('does the same through the HTTP proxy of its kubeconfig (proxy-url)', (t) =>
    stalledThenCut(t, { tunnel: true }));
});
