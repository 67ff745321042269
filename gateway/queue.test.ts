import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '../protocol/index.ts';
import { createLogger } from './logging.ts';
import { type CycleOutcome, ObjectQueue } from './queue.ts';

const quiet = createLogger({ sink: { write: () => {} } });

function version(uid: string, resourceVersion: string): KubernetesObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: uid, uid, resourceVersion } };
}

/** A processor whose cycles the test finishes by hand, recording what each cycle saw. */
function controlledProcessor() {
  const seen: string[] = [];
  const pending: Array<(outcome: CycleOutcome) => void> = [];
  let running = 0;
  let maxRunning = 0;
  const waiters: Array<() => void> = [];
  return {
    seen,
    get maxRunning() {
      return maxRunning;
    },
    process: (object: KubernetesObject) =>
      new Promise<CycleOutcome>((resolve) => {
        seen.push(`${object.metadata.uid}@${object.metadata.resourceVersion}`);
        running++;
        maxRunning = Math.max(maxRunning, running);
        pending.push((outcome) => {
          running--;
          resolve(outcome);
        });
        waiters.splice(0).forEach((wake) => {
          wake();
        });
      }),
    /** Waits until `count` cycles have started. */
    async started(count: number) {
      while (seen.length < count) await new Promise<void>((wake) => waiters.push(wake));
    },
    finish(outcome: CycleOutcome = {}) {
      (pending.shift() as (outcome: CycleOutcome) => void)(outcome);
    },
  };
}

describe('object queue', () => {
  it('runs one cycle per object at a time and then only the newest state', async () => {
    const processor = controlledProcessor();
    const queue = new ObjectQueue({ concurrency: 8, process: processor.process, logger: quiet });
    queue.push('ADDED', version('a', '1'));
    await processor.started(1);
    queue.push('MODIFIED', version('a', '2'));
    queue.push('MODIFIED', version('a', '3'));
    processor.finish();
    await processor.started(2);
    processor.finish();
    await queue.stop();
    assert.deepEqual(processor.seen, ['a@1', 'a@3']);
    assert.equal(processor.maxRunning, 1);
  });

  it('works on different objects concurrently, up to the limit', async () => {
    const processor = controlledProcessor();
    const queue = new ObjectQueue({ concurrency: 2, process: processor.process, logger: quiet });
    for (const uid of ['a', 'b', 'c']) queue.push('ADDED', version(uid, '1'));
    await processor.started(2);
    assert.deepEqual(processor.seen, ['a@1', 'b@1']);
    processor.finish();
    await processor.started(3);
    processor.finish();
    processor.finish();
    await queue.stop();
    assert.equal(processor.maxRunning, 2);
  });

  it('after its own write, waits until the watch shows it before the next cycle', async () => {
    const processor = controlledProcessor();
    const queue = new ObjectQueue({
      concurrency: 8,
      process: processor.process,
      logger: quiet,
      consistencyTimeoutMs: 60_000,
    });
    queue.push('ADDED', version('a', '1'));
    await processor.started(1);
    processor.finish({ written: '5' });
    await Promise.resolve();
    queue.push('MODIFIED', version('a', '4')); // an older event still in flight: must not start a cycle
    assert.equal(processor.seen.length, 1);
    queue.push('MODIFIED', version('a', '5'));
    await processor.started(2);
    processor.finish();
    await queue.stop();
    assert.deepEqual(processor.seen, ['a@1', 'a@5']);
  });

  it('runs the same state again when a cycle asks for a retry', async () => {
    const processor = controlledProcessor();
    const queue = new ObjectQueue({ concurrency: 8, process: processor.process, logger: quiet });
    queue.push('ADDED', version('a', '1'));
    await processor.started(1);
    processor.finish({ retryAfterMs: 5 });
    await processor.started(2);
    processor.finish();
    await queue.stop();
    assert.deepEqual(processor.seen, ['a@1', 'a@1']);
  });

  it('forgets an object once it is deleted and idle', async () => {
    const processor = controlledProcessor();
    const queue = new ObjectQueue({ concurrency: 8, process: processor.process, logger: quiet });
    queue.push('ADDED', version('a', '1'));
    await processor.started(1);
    processor.finish({ retryAfterMs: 60_000 });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(queue.size, 1);
    queue.push('DELETED', version('a', '2'));
    assert.equal(queue.size, 0);
    await queue.stop();
  });
});
