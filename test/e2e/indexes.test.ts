/** Kopf's in-memory indexes on a real apiserver: declared, computed in batches, complete, kept current. */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { operator, PermanentError, TemporaryError } from '../../functions/index.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import type { InvocationBatch, InvocationRequest, KubernetesObject } from '../../protocol/index.ts';
import { equal } from '../../protocol/json.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  kubeClient,
  memoryLogger,
  type NamedHandler,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';

/**
 * The operator, with the size of each batch of index calls it was sent, and, of each other call, the
 * object's name and whether it carried indexes whole or named their versions only.
 */
function countingBatches(op: NamedHandler): {
  service: NamedHandler;
  batches: number[];
  calls: Array<{ name: string; whole: boolean; versions: boolean }>;
} {
  const batches: number[] = [];
  const calls: Array<{ name: string; whole: boolean; versions: boolean }> = [];
  const service = {
    name: op.name,
    async fetch(request: Request) {
      if (request.method === 'POST') {
        const body = (await request.clone().json()) as Partial<InvocationBatch & InvocationRequest>;
        if (body.batch) batches.push(body.batch.length);
        else if (body.body) {
          const name = String(body.body.metadata.name);
          calls.push({ name, whole: body.indexes !== undefined, versions: body.indexVersions !== undefined });
        }
      }
      return op.fetch(request);
    },
  };
  return { service, batches, calls };
}

describe('indexes', () => {
  let client: KubeClient;
  before(async () => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    client = await kubeClient();
  });
  const configMap = (namespace: string, name: string, labels: Record<string, string>, phase: string) =>
    client.request(`/api/v1/namespaces/${namespace}/configmaps`, {
      method: 'POST',
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels }, data: { phase } },
    });

  it('gives a handler the indexes it declares, complete at its first call after a start, computed in batches', async (t) => {
    const namespace = await testNamespace(t);
    for (let i = 0; i < 40; i++) {
      await configMap(
        namespace,
        `cm-${i}`,
        { app: i % 2 ? 'odd' : 'even', indexed: 'yes' },
        i % 4 ? 'Running' : 'Pending',
      );
    }
    // Handled as the gateway starts: its create handler waits for both indexes to hold all 40.
    await createKopfExample(namespace, 'early');
    const op = operator({ name: 'indexes', secret: TEST_SECRET });
    op.index('configmaps', { id: 'byApp' }, { key: { label: 'app' }, value: 'metadata.name' });
    op.index('configmaps', { labels: { indexed: 'yes' } }, function phases({ name, body }) {
      return { [(body.data as Record<string, string>).phase as string]: name };
    });
    op.on.create('kopfexamples', { indexes: ['byApp', 'phases'] }, function counted({ indexes }) {
      const { byApp, phases } = indexes as Record<string, Map<string | null, readonly string[]>>;
      return {
        odd: byApp?.get('odd')?.length,
        even: byApp?.get('even')?.length,
        running: phases?.get('Running')?.length,
        pending: phases?.get('Pending')?.length,
      };
    });
    op.on.create('kopfexamples', function unread({ indexes }) {
      return { indexes: Object.keys(indexes) };
    });
    const { service, batches, calls } = countingBatches(op);
    const running = await runOperator(service, { namespaces: [namespace] });
    t.after(() => running.stop());

    const path = `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/early`;
    const status = await eventually('both results', async () => {
      const { status } = await client.get<KubernetesObject>(path);
      return status?.counted && status.unread ? status : undefined;
    });
    assert.deepEqual(status.counted, { odd: 20, even: 20, running: 30, pending: 10 });
    assert.deepEqual(status.unread, { indexes: [] }, 'a handler that declares no index gets none');
    assert.equal(
      batches.reduce((sum, size) => sum + size, 0),
      40,
      'each listed object was asked about once',
    );
    assert.ok(batches.length <= 4, `40 objects in a few batches, not one call each: ${batches.join(', ')}`);

    // The indexes unchanged, the next call names their versions only, and the handler reads the same.
    await createKopfExample(namespace, 'later');
    const later = await eventually('the later result', async () => {
      const { status } = await client.get<KubernetesObject>(path.replace(/early$/, 'later'));
      return status?.counted;
    });
    assert.deepEqual(later, { odd: 20, even: 20, running: 30, pending: 10 });
    assert.deepEqual(
      calls.map(({ name, whole, versions }) => [name, whole, versions]),
      [
        ['early', true, true],
        ['later', false, true],
      ],
    );
  });

  it('follows objects added, changed, no longer matching and deleted; retries temporary failures; gives up permanent ones until the object changes', async (t) => {
    const namespace = await testNamespace(t);
    const op = operator({ name: 'indexes', secret: TEST_SECRET });
    let flakyFailures = 0;
    op.index('configmaps', { labels: { indexed: 'yes' } }, function phases({ name, body, annotations }) {
      if (name === 'flaky' && flakyFailures++ < 2) throw new TemporaryError('not yet', { delay: 0.2 });
      if (name === 'doomed' && !annotations.fixed) throw new PermanentError('cannot index this');
      return { [(body.data as Record<string, string>).phase as string]: name };
    });
    op.on.timer('kopfexamples', { interval: 0.2, indexes: ['phases'] }, function seen({ indexes }) {
      // Both keys always: a result is merged into the one before, so a key left out would stay.
      const phases = indexes.phases as Map<string | null, readonly string[]>;
      return {
        Running: [...(phases.get('Running') ?? [])].sort(),
        Pending: [...(phases.get('Pending') ?? [])].sort(),
      };
    });
    const logger = memoryLogger();
    const running = await runOperator(op, { namespaces: [namespace], logger });
    t.after(() => running.stop());
    const path = await createKopfExample(namespace, 'watcher');
    const seen = (expected: { Running: string[]; Pending: string[] }) =>
      eventually(`index ${JSON.stringify(expected)}`, async () => {
        const current = (await client.get<KubernetesObject>(path)).status?.seen;
        return equal(current, expected) ? current : undefined;
      });
    const configMaps = `/api/v1/namespaces/${namespace}/configmaps`;
    const patch = (name: string, body: object) => client.patch(`${configMaps}/${name}`, 'merge', body);

    await configMap(namespace, 'a', { indexed: 'yes' }, 'Running');
    await configMap(namespace, 'b', { indexed: 'yes' }, 'Pending');
    await configMap(namespace, 'ignored', { indexed: 'no' }, 'Running');
    await seen({ Running: ['a'], Pending: ['b'] });

    await patch('b', { data: { phase: 'Running' } });
    await seen({ Running: ['a', 'b'], Pending: [] });

    await patch('a', { metadata: { labels: { indexed: 'no' } } });
    await seen({ Running: ['b'], Pending: [] });

    await configMap(namespace, 'flaky', { indexed: 'yes' }, 'Pending');
    await seen({ Running: ['b'], Pending: ['flaky'] });
    assert.equal(flakyFailures, 3, 'asked again after each temporary failure, until it succeeded');

    await configMap(namespace, 'doomed', { indexed: 'yes' }, 'Running');
    await eventually('the permanent failure logged', async () =>
      logger.lines.some(
        (line) =>
          line.includes('index failed; not asked again until the object changes ') &&
          line.includes(' handler=phases err="failed permanently: cannot index this"'),
      )
        ? true
        : undefined,
    );
    await patch('doomed', { metadata: { annotations: { fixed: 'yes' } } });
    await seen({ Running: ['b', 'doomed'], Pending: ['flaky'] });

    await client.request(`${configMaps}/b`, { method: 'DELETE' });
    await seen({ Running: ['doomed'], Pending: ['flaky'] });
  });
});
