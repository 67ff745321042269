/** Label filters every handler shares are sent to the API: the gateway never receives other objects. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { operator } from '../../functions/index.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  applyFile,
  eventually,
  kubeClient,
  memoryLogger,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';

describe('label selectors', () => {
  it('watches with the labels every handler requires as the selector, and handles only those objects', async (t) => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    const namespace = await testNamespace(t);
    const seen: string[] = [];
    const op = operator({ name: 'selective', secret: TEST_SECRET });
    op.on.event('kopfexamples', { labels: { team: 'a' } }, async function watch_fn({ name }) {
      seen.push(name);
    });
    op.on.create('kopfexamples', { labels: { team: 'a' } }, async function create_fn() {
      return { selected: true };
    });
    const logger = memoryLogger();
    const running = await runOperator(op, { namespaces: [namespace], logger, transport: 'in-process' });
    t.after(() => running.stop());
    assert.ok(
      logger.lines.some((line) => line.includes(`namespaces/${namespace}/kopfexamples labels="team=a"`)),
    );

    const client = await kubeClient();
    const path = `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`;
    for (const [name, labels] of [
      ['other', { team: 'b' }],
      ['mine', { team: 'a' }],
    ] as const) {
      await client.request(path, {
        method: 'POST',
        body: { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name, labels } },
      });
    }
    await eventually('the selected object handled', async () => {
      const object = await client.get<KubernetesObject>(`${path}/mine`);
      return object.status?.create_fn ? true : undefined;
    });
    assert.deepEqual([...new Set(seen)], ['mine']);
    const other = await client.get<KubernetesObject>(`${path}/other`);
    assert.equal(other.status, undefined, 'the object without the labels is left alone');
  });
});
