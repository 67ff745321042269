/** examples/07-subhandlers: sub-handlers with progress of their own, on a real apiserver. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from 'causeway/protocol';
import { startExample } from '../support/examples.ts';
import { eventually, kubeClient } from '../support/operator.ts';

describe('examples/07-subhandlers', () => {
  it('retries only the sub-handler that failed, then stores the result and clears the progress', async (t) => {
    const { namespace, running } = await startExample(t, '07-subhandlers');
    const client = await kubeClient();

    const object = await eventually('the result', async () => {
      const current = await client.get<KubernetesObject>(
        `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/kopf-example-7`,
      );
      return current.status?.create_fn === undefined ? undefined : current;
    });
    assert.deepEqual(object.status?.create_fn, { items: 3 });
    assert.equal(
      (object.status?.causeway as { progress?: unknown } | undefined)?.progress,
      undefined,
      'progress is purged when done',
    );
    const handled = running.logs
      .filter((line) => line.includes('] handled ') && line.includes(' handler=create_fn '))
      .map((line) => /\] (handled .*?) resource=.* traceId=([0-9a-f]{32})/.exec(line)?.slice(1) ?? [line]);
    assert.deepEqual(
      handled.map(([message]) => message),
      ['handled first (attempt 1)', 'handled third (attempt 1)', 'handled second (attempt 2)'],
    );
    const [first, third, second] = handled.map(([, trace]) => trace);
    assert.equal(first, third, 'one call, one trace');
    assert.notEqual(second, first, 'the retry is another call');
  });
});
