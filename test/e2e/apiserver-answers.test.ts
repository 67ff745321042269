/**
 * A watch resumed from a position etcd has compacted away. The real apiserver, run without its watch
 * cache, answers 410 Gone; the gateway lists again and misses nothing of what changed while its watch
 * was away. A proxy parts the gateway's watch from the apiserver while objects are created and
 * deleted and etcd is compacted (ControlPlane.compact, through etcd's JSON gateway).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { operator } from '../../functions/index.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { startLaggingProxy } from '../support/lagging-proxy.ts';
import {
  createKopfExamples,
  createResults,
  eventually,
  memoryLogger,
  objectNames,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';
import { startPrivateCluster } from '../support/private-cluster.ts';

describe('a watch resumed after etcd compacted its position', () => {
  it('is answered 410 Gone; the gateway lists again and handles what changed meanwhile', async (t) => {
    const cluster = await startPrivateCluster({ watchCache: false });
    t.after(() => cluster.stop());
    const namespace = await cluster.namespace();
    const path = `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`;
    const proxy = await startLaggingProxy(cluster.controlPlane);
    t.after(() => proxy.close());

    const calls: string[] = [];
    const op = operator({ name: 'expired', secret: TEST_SECRET });
    op.on.create('kopfexamples', async function create_fn({ name }) {
      calls.push(`create ${name}`);
      return { created: name };
    });
    // A delete handler: the finalizer holds a deleted object until the gateway has seen the deletion.
    op.on.delete('kopfexamples', async function delete_fn({ name }) {
      calls.push(`delete ${name}`);
    });
    const logger = memoryLogger();
    const running = await runOperator(op, {
      namespaces: [namespace],
      kubeconfig: proxy.kubeConfig(),
      logger,
      transport: 'in-process',
    });
    t.after(() => running.stop());

    const before = objectNames('before', 3);
    await createKopfExamples(namespace, before, {}, cluster.client);
    await eventually('the first objects handled', async () =>
      (await createResults(namespace, cluster.client)).size === before.length ? true : undefined,
    );

    // The gateway's watch away: what changes now, it can learn only from a list.
    await proxy.refuseWatches('kopfexamples');
    const missed = objectNames('missed', 5);
    await createKopfExamples(namespace, missed, {}, cluster.client);
    await cluster.client.request(`${path}/${before[0]}`, { method: 'DELETE' });
    const revision = await cluster.controlPlane.compact();
    await proxy.refuseWatches(undefined);

    await eventually('the watch answered 410 Gone', async () =>
      logger.lines.find((line) => /watch position expired \(410 Gone\): listing again/.test(line)),
    );
    await eventually('what changed while the watch was away handled', async () => {
      const list = await cluster.client.get<{ items: KubernetesObject[] }>(path);
      const names = list.items.map((item) => item.metadata.name);
      const handled = list.items.filter((item) => item.status?.create_fn).length;
      return handled === list.items.length && !names.includes(before[0] as string) ? true : undefined;
    });
    t.diagnostic(`etcd compacted at revision ${revision}`);
    assert.deepEqual(
      calls.toSorted(),
      [...[...before, ...missed].map((name) => `create ${name}`), `delete ${before[0]}`].sort(),
      'each handler called once for each object',
    );
  });
});
