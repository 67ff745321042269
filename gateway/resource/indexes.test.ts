/** Indexes as the gateway keeps them, fed by hand, with operators in this process. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Operator, operator, TemporaryError } from '../../functions/index.ts';
import { IN_PROCESS, type InvocationBatch, type KubernetesObject } from '../../protocol/index.ts';
import { equal } from '../../protocol/json.ts';
import { Budget } from '../dispatch/budget.ts';
import { FunctionService } from '../dispatch/function-service.ts';
import { hmacSigner } from '../dispatch/signer.ts';
import { type FetchHandler, inProcessTransport } from '../dispatch/transport.ts';
import type { DiscoveredResource } from '../kube/discovery.ts';
import { createLogger } from '../logging.ts';
import type { ServedResource } from '../reactor/model.ts';
import type { StateStorage } from '../state/storage.ts';
import { declaredEntries, Indexes, IndexStore } from './indexes.ts';

const SECRET = new TextEncoder().encode('a secret of at least thirty-two bytes, for the test');
const PODS = {
  group: '',
  version: 'v1',
  plural: 'pods',
  kind: 'Pod',
  namespaced: true,
} as unknown as DiscoveredResource;

const pod = (name: string, version: string, extra: Partial<KubernetesObject> = {}): KubernetesObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name,
    namespace: 'default',
    uid: `uid-${name}`,
    resourceVersion: version,
    labels: { app: 'web' },
  },
  spec: { nodeName: 'node-1' },
  ...extra,
});

describe('IndexStore', () => {
  it('holds each key with the values of every object, in the order the objects were first indexed, replaced per object and gone with it', () => {
    const store = new IndexStore();
    store.set('a', [
      ['x', 1],
      ['y', 2],
    ]);
    store.set('b', [['x', 3]]);
    assert.deepEqual(store.contents(), [
      ['x', [1, 3]],
      ['y', [2]],
    ]);
    store.set('a', [[null, 4]]);
    assert.deepEqual(store.contents(), [
      [null, [4]],
      ['x', [3]],
    ]);
    store.set('b', []);
    store.remove('nothing');
    assert.deepEqual(store.contents(), [[null, [4]]]);
    assert.equal(store.size, 1);
  });

  it('shares its contents, frozen, until values change, and keeps a copy of what it is given', () => {
    const store = new IndexStore();
    const value = { node: 'node-1' };
    store.set('a', [['x', value]]);
    const contents = store.contents();
    assert.ok(Object.isFrozen(contents) && Object.isFrozen(contents[0]?.[1]?.[0]));
    assert.equal(Object.isFrozen(value), false, "the object's part is left as it was");
    store.set('a', [['x', { node: 'node-1' }]]);
    assert.equal(store.contents(), contents, 'the same values again change nothing');
    store.set('a', [['x', { node: 'node-2' }]]);
    assert.notEqual(store.contents(), contents);
    assert.deepEqual(store.contents(), [['x', [{ node: 'node-2' }]]]);
  });
});

describe('IndexStore, held to its limits', () => {
  it("refuses an object's values over the bytes one object may put in, and leaves the object out", () => {
    const store = new IndexStore({ bytesPerObject: 20, budget: new Budget(1000) });
    assert.equal(store.set('a', [['x', 'small']]), undefined);
    assert.equal(
      store.set('a', [['x', 'a value far longer than twenty bytes']]),
      'its values are 46 bytes, over the 20 one object may put in an index (calls.indexBytesPerObject)',
    );
    assert.deepEqual(store.contents(), [], 'nor are the values it had kept');
  });

  it("refuses what would take the service's indexes over their budget, shared by its indexes, and gives back what goes", () => {
    const budget = new Budget(40);
    const [first, second] = [
      new IndexStore({ bytesPerObject: 40, budget }),
      new IndexStore({ bytesPerObject: 40, budget }),
    ];
    assert.equal(first.set('a', [['x', 'aaaaaaaaaa']]), undefined); // 20 bytes as JSON
    assert.equal(budget.used, 20);
    assert.match(
      second.set('b', [['x', 'bbbbbbbbbbbbbbbbbbbbbbb']]) ?? '',
      /its values \(33 bytes\) would take the service's indexes over their budget of 40 bytes \(calls\.indexBytesPerService\)/,
    );
    assert.deepEqual([budget.used, budget.waits], [20, 1]);
    first.set('a', [['x', 'a']]); // smaller: gives back the difference
    assert.equal(budget.used, 11);
    first.remove('a');
    assert.equal(budget.used, 0);
    assert.equal(second.set('b', [['x', 'bbbbbbbbbbbbbbbbbbbbbbb']]), undefined);
    assert.deepEqual(second.contents(), [['x', ['bbbbbbbbbbbbbbbbbbbbbbb']]]);
  });
});

describe('declaredEntries', () => {
  it('reads keys and values from fields, labels and annotations, and indexes nothing when a key part is missing', () => {
    const object = pod('p', '1', {
      metadata: {
        name: 'p',
        namespace: 'ns',
        uid: 'u',
        labels: { app: 'web' },
        annotations: { team: 'blue' },
      },
    });
    assert.deepEqual(declaredEntries({ key: [{ field: 'spec.nodeName' }] }, object), [['node-1', 'ns/p']]);
    assert.deepEqual(
      declaredEntries(
        {
          key: [{ label: 'app' }, { annotation: 'team' }],
          value: [{ field: 'metadata.name' }, { label: 'x' }],
        },
        object,
      ),
      [['web/blue', ['p', null]]],
    );
    assert.deepEqual(declaredEntries({ value: { field: 'spec' } }, object), [[null, { nodeName: 'node-1' }]]);
    assert.deepEqual(declaredEntries({ key: [{ label: 'missing' }] }, object), []);
  });
});

/** The operator, with the size of each batch it was sent; the first `failing` batches fail. */
function countingBatches(op: Operator, failing = 0) {
  const batches: number[] = [];
  const calls = op[IN_PROCESS];
  const service = {
    fetch: op.fetch,
    [IN_PROCESS]: {
      ...calls,
      invokeBatch: (request: InvocationBatch) => {
        batches.push(request.batch.length);
        if (batches.length <= failing) return Promise.reject(new Error('the service broke'));
        return calls.invokeBatch(request);
      },
    },
  };
  return { service, batches };
}

/** Polls a condition (the indexes change in the background), for at most two seconds. */
async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  for (const deadline = Date.now() + 2000; !(await condition()); ) {
    if (Date.now() > deadline) throw new Error('the condition never held');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('indexes fed by a watch', () => {
  async function setUp(op: FetchHandler) {
    const service = await FunctionService.connect({
      transport: inProcessTransport(op),
      name: undefined,
      sign: hmacSigner(SECRET),
    });
    const stopping = new AbortController();
    const lines: string[] = [];
    const indexes = new Indexes({
      batchSize: 100,
      batchBytes: 1024 * 1024,
      retryDelaysS: [0.01],
      stopping: stopping.signal,
      logger: createLogger({ level: 'debug', sink: { write: (line) => lines.push(line) } }),
    });
    const served: ServedResource = {
      resource: PODS,
      storage: undefined as unknown as StateStorage,
      bindings: [{ service, handlers: [...service.manifest.handlers] }],
    };
    const feed = indexes.feed(served);
    const stop = () => {
      stopping.abort();
      return feed.stop();
    };
    return { indexes, feed, lines, stop };
  }

  it('asks about an object once for all its changes while it waited, in one batch with the others', async () => {
    const asked: string[] = [];
    const op = operator({ name: 'idx' });
    op.index('pods', function versions({ name, meta }) {
      asked.push(`${name}@${meta.resourceVersion}`);
      return { [name]: meta.resourceVersion };
    });
    const { service, batches } = countingBatches(op);
    const { indexes, feed, stop } = await setUp(service);
    const listed = Promise.withResolvers<void>();
    feed.listing(listed.promise);
    feed.watching();
    feed.observe('ADDED', pod('a', '1'));
    feed.observe('ADDED', pod('b', '1'));
    feed.observe('MODIFIED', pod('a', '2'));
    feed.observe('MODIFIED', pod('a', '3'));
    listed.resolve();
    const contents = await indexes.contents('idx', ['versions']);
    assert.deepEqual(contents.versions, [
      ['a', ['3']],
      ['b', ['1']],
    ]);
    assert.deepEqual(asked, ['a@3', 'b@1']);
    assert.deepEqual(batches, [2]);
    feed.observe('MODIFIED', pod('a', '3')); // the same version again (a relist): not asked again
    feed.observe('DELETED', pod('b', '1'));
    assert.deepEqual((await indexes.contents('idx', ['versions'])).versions, [['a', ['3']]]);
    assert.deepEqual(asked, ['a@3', 'b@1']);
    await stop();
  });

  it('keeps the values when a call fails as a whole, and asks again', async () => {
    const op = operator({ name: 'idx' });
    op.index('pods', function versions({ name, meta }) {
      return { [name]: meta.resourceVersion };
    });
    const { service, batches } = countingBatches(op, 1);
    const { indexes, feed, lines, stop } = await setUp(service);
    feed.watching();
    feed.observe('ADDED', pod('a', '1'));
    assert.deepEqual((await indexes.contents('idx', ['versions'])).versions, [['a', ['1']]]);
    feed.observe('MODIFIED', pod('a', '2'));
    await until(() => lines.some((line) => line.includes('indexing failed service=idx objects=1')));
    assert.deepEqual((await indexes.contents('idx', ['versions'])).versions, [['a', ['1']]], 'kept');
    await until(async () => equal((await indexes.contents('idx', ['versions'])).versions, [['a', ['2']]]));
    assert.deepEqual(batches, [1, 1, 1], 'asked, failed, asked again');
    await stop();
  });

  it('is empty and complete for an index no served resource holds', async () => {
    const op = operator({ name: 'idx' });
    op.index('pods', function names({ name }) {
      return name;
    });
    const { indexes, stop } = await setUp(op);
    assert.deepEqual(await indexes.contents('idx', ['unknown']), { unknown: [] });
    await stop();
  });

  it('removes the values of a temporary failure and asks again after its delay', async () => {
    let failures = 0;
    const op = operator({ name: 'idx' });
    op.index('pods', function names({ name }) {
      if (failures++ < 1) throw new TemporaryError('not yet', { delay: 0.01 });
      return name;
    });
    const { indexes, feed, lines, stop } = await setUp(op);
    feed.watching();
    feed.observe('ADDED', pod('a', '1'));
    assert.deepEqual((await indexes.contents('idx', ['names'])).names, [], 'not indexed while failing');
    assert.ok(
      lines.some((line) => line.includes('index failed temporarily handler=names retry=0 delaySeconds=0.01')),
    );
    await until(async () => equal((await indexes.contents('idx', ['names'])).names, [[null, ['a']]]));
    await stop();
  });
});
