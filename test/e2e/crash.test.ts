/**
 * Crash safety, small: `causeway run` is killed with SIGKILL four times while it works through a
 * backlog, then run to the end. No result is lost, no object is called again once its result is
 * stored, and an object called more than once (its call was in flight at a kill) got the same
 * idempotency key every time. bench/crash.ts does the same at scale, against Kopf.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testCluster, testNamespace } from '../support/cluster.ts';
import { applyFile, eventually, kubeClient } from '../support/operator.ts';
import { type CliProcess, causeway } from '../support/processes.ts';

const OBJECTS = 150;
/**
 * Objects processed at once. Fewer than the default 64, so that calls follow results through the
 * backlog (a slot takes its next object only after its last write) rather than 64 going out at once:
 * killed after N calls, a run has stored at least N - CONCURRENCY results.
 */
const CONCURRENCY = 8;
/** Each killed run is killed once it has made this many calls: the kills spread over the backlog. */
const CALLS_BEFORE_KILL = [20, 30, 30, 30];
const MODULE = 'test/fixtures/call-log-operator.ts';

interface Call {
  name: string;
  key: string;
  /** 1…4 for the killed runs, 5 for the last one. */
  run: number;
}

/** Reads the lines the handler appended, as calls. */
function callsIn(path: string, run: number, from: number): Call[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .slice(from)
    .filter(Boolean)
    .map((line) => {
      const [name, key] = line.split(' ');
      return { name: name as string, key: key as string, run };
    });
}

function lineCount(path: string): number {
  const text = readFileSync(path, 'utf8');
  return text.length === 0 ? 0 : text.split('\n').length - 1;
}

describe('crash safety', () => {
  it('loses no result and keeps idempotency keys across four kill -9 of causeway run', async (t) => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const path = `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`;
    const names = Array.from({ length: OBJECTS }, (_, index) => `kex-${String(index).padStart(3, '0')}`);
    for (let start = 0; start < OBJECTS; start += 25) {
      await Promise.all(
        names.slice(start, start + 25).map((name) =>
          client.request(path, {
            method: 'POST',
            body: {
              apiVersion: 'kopf.dev/v1',
              kind: 'KopfExample',
              metadata: { name },
              spec: { field: 'x' },
            },
          }),
        ),
      );
    }

    const logPath = join(mkdtempSync(join(tmpdir(), 'causeway-crash-')), 'calls.log');
    writeFileSync(logPath, '');
    const env = {
      ...process.env,
      KUBECONFIG: (await testCluster()).kubeconfigPath,
      CAUSEWAY_CALL_LOG: logPath,
    };
    const args = [
      'run',
      MODULE,
      '--standalone',
      '--namespace',
      namespace,
      '--concurrency',
      String(CONCURRENCY),
    ];
    let current: CliProcess | undefined;
    t.after(() => current?.stop('SIGKILL'));
    const results = async () => {
      const list = await client.get<{ items: KubernetesObject[] }>(path);
      return new Set(list.items.filter((item) => item.status?.create_fn).map((item) => item.metadata.name));
    };

    const calls: Call[] = [];
    /** Names with a result after each kill. */
    const stored: Set<string>[] = [];
    for (const [index, limit] of CALLS_BEFORE_KILL.entries()) {
      const run = index + 1;
      const before = lineCount(logPath);
      const started = Date.now();
      current = causeway(args, env);
      // Polled this often: kill as soon as the run has made its calls, whatever it is doing then.
      for (;;) {
        if (lineCount(logPath) - before >= limit) break;
        if (current.child.exitCode !== null) assert.fail(`run ${run} exited:\n${current.output()}`);
        if (Date.now() - started > 30_000)
          assert.fail(`run ${run} made no ${limit} calls:\n${current.output()}`);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      process.kill(current.child.pid as number, 'SIGKILL');
      assert.equal(await current.exited(), 'SIGKILL');
      calls.push(...callsIn(logPath, run, before));
      stored.push(await results());
      t.diagnostic(
        `kill ${run}: ${lineCount(logPath) - before} calls, ${stored.at(-1)?.size} results in all`,
      );
    }
    assert.ok((stored[0]?.size ?? 0) > 0, 'results were stored before the first kill');
    assert.ok(
      (stored.at(-1)?.size ?? 0) < OBJECTS,
      'the last kill left objects to handle: every kill was made while processing',
    );

    const before = lineCount(logPath);
    current = causeway(args, env);
    await eventually(`status.create_fn on all ${OBJECTS} objects`, async () =>
      (await results()).size === OBJECTS ? true : undefined,
    );
    assert.equal(await current.stop(), 0, 'the last run stops cleanly');
    calls.push(...callsIn(logPath, CALLS_BEFORE_KILL.length + 1, before));
    t.diagnostic(`last run: ${lineCount(logPath) - before} calls`);

    const byName = Map.groupBy(calls, (call) => call.name);
    assert.deepEqual([...byName.keys()].sort(), names, 'every object was called');
    const repeated = [...byName].filter(([, ofName]) => ofName.length > 1);
    t.diagnostic(`${repeated.length} objects called more than once`);
    for (const [name, ofName] of repeated) {
      assert.equal(
        new Set(ofName.map((call) => call.key)).size,
        1,
        `${name} was called with different idempotency keys: ${JSON.stringify(ofName)}`,
      );
      // A call in a later run is a repeat of one in flight at a kill: never of one whose result was stored.
      for (const call of ofName.slice(1)) {
        const storedBefore = stored.slice(0, call.run - 1).some((names) => names.has(name));
        assert.ok(!storedBefore, `${name} was called again in run ${call.run} after its result was stored`);
      }
    }
  });
});
