import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { KubernetesObject } from '../../protocol/index.ts';
import { ApiUnreachable } from '../kube/reachability.ts';
import { createLogger } from '../logging.ts';
import { DEFAULT_SETTINGS } from '../settings.ts';
import { MAX_TIMER_MS } from '../timing.ts';
import type { CycleOutcome } from './model.ts';
import { isOlder, ObjectQueue, type QueueOptions } from './queue.ts';

const quiet = createLogger({ sink: { write: () => {} } });

function version(uid: string, resourceVersion: string): KubernetesObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: uid, uid, resourceVersion } };
}

/**
 * A queue over `process`; reading an object afresh fails, and the API never answers again after it did
 * not, unless the test says otherwise.
 */
function queueOf(
  process: QueueOptions['process'],
  options: Partial<QueueOptions> & Pick<QueueOptions, 'concurrency'>,
): ObjectQueue {
  return new ObjectQueue({
    ...DEFAULT_SETTINGS.processing,
    process,
    logger: quiet,
    refresh: async () => {
      throw new Error('no refresh expected');
    },
    apiBack: (signal) => new Promise((resolve) => signal.addEventListener('abort', () => resolve())),
    ...options,
  });
}

/** A JSON logger at the debug level, and the lines it wrote. */
function recordingLogger() {
  const lines: Array<{ level: string; msg: string }> = [];
  const logger = createLogger({
    level: 'debug',
    format: 'json',
    sink: { write: (line) => lines.push(JSON.parse(line)) },
  });
  return { logger, lines };
}

/** Reading an object afresh finds `fresh`, counted. */
function freshReads(fresh: KubernetesObject) {
  const reads = {
    count: 0,
    refresh: async () => {
      reads.count++;
      return fresh;
    },
  };
  return reads;
}

/** An API the test brings back by hand; `waiting` settles once the queue waits for it. */
function apiComingBack() {
  const back = Promise.withResolvers<void>();
  const waiting = Promise.withResolvers<void>();
  return {
    back: () => back.resolve(),
    waiting: waiting.promise,
    apiBack: () => {
      waiting.resolve();
      return back.promise;
    },
  };
}

/** A processor whose cycles the test finishes by hand, recording what each cycle saw. */
function controlledProcessor() {
  const seen: string[] = [];
  const pending: Array<{ finish(outcome: CycleOutcome): void; fail(error: unknown): void }> = [];
  let running = 0;
  let maxRunning = 0;
  const waiters: Array<() => void> = [];
  return {
    seen,
    get maxRunning() {
      return maxRunning;
    },
    process: (object: KubernetesObject) =>
      new Promise<CycleOutcome>((resolve, reject) => {
        seen.push(`${object.metadata.uid}@${object.metadata.resourceVersion}`);
        running++;
        maxRunning = Math.max(maxRunning, running);
        pending.push({
          finish(outcome) {
            running--;
            resolve(outcome);
          },
          fail(error) {
            running--;
            reject(error);
          },
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
      pending.shift()?.finish(outcome);
    },
    fail(error: unknown) {
      pending.shift()?.fail(error);
    },
  };
}

describe('object queue', () => {
  it('runs one cycle per object at a time and then only the newest state', async () => {
    const processor = controlledProcessor();
    const queue = queueOf(processor.process, { concurrency: 8 });
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
    const queue = queueOf(processor.process, { concurrency: 2 });
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
    const queue = queueOf(processor.process, { concurrency: 8, consistencyTimeoutMs: 60_000 });
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

  it('says how long the oldest change not yet handled has waited: through a retry, and none once handled', async () => {
    const processor = controlledProcessor();
    let cycleEnded = Promise.withResolvers<void>();
    const queue = queueOf(processor.process, {
      concurrency: 1,
      observer: { added() {}, started() {}, finished: () => cycleEnded.resolve() },
    });
    assert.equal(queue.oldestUnhandledSeconds(), 0);
    queue.push('ADDED', version('a', '1'));
    await processor.started(1);
    const inCycle = queue.oldestUnhandledSeconds();
    assert.ok(inCycle > 0, 'in its cycle');
    processor.finish({ retryAfterMs: 60_000 });
    await cycleEnded.promise;
    assert.ok(queue.oldestUnhandledSeconds() >= inCycle, 'to be retried: still waiting, since it came');
    queue.push('DELETED', version('a', '2'));
    assert.equal(queue.oldestUnhandledSeconds(), 0, 'gone: nothing to handle');

    cycleEnded = Promise.withResolvers<void>();
    queue.push('ADDED', version('b', '1'));
    await processor.started(2);
    processor.finish();
    await cycleEnded.promise;
    assert.equal(queue.oldestUnhandledSeconds(), 0, 'handled');
    await queue.stop();
  });

  it('runs a failed cycle again after its delay on the object read afresh, not on the state it failed with', async () => {
    const { logger, lines } = recordingLogger();
    const processor = controlledProcessor();
    // Its result was written, though the answer was lost: the API has the object with it.
    const reads = freshReads(version('a', '2'));
    const queue = queueOf(processor.process, {
      concurrency: 1,
      logger,
      errorDelaysS: [0],
      refresh: reads.refresh,
    });
    queue.push('ADDED', version('a', '1'));
    await processor.started(1);
    processor.fail(new Error('read ECONNRESET'));
    await processor.started(2);
    processor.finish();
    await queue.stop();
    assert.deepEqual(processor.seen, ['a@1', 'a@2']);
    assert.equal(reads.count, 1);
    assert.deepEqual(
      lines.filter((line) => line.msg === 'processing failed').map((line) => line.level),
      ['error'],
    );
  });

  it("runs the watch's newer state after a failed cycle's delay, without reading the object", async () => {
    const processor = controlledProcessor();
    const queue = queueOf(processor.process, { concurrency: 1, errorDelaysS: [0] });
    queue.push('ADDED', version('a', '1'));
    await processor.started(1);
    processor.fail(new Error('read ECONNRESET'));
    queue.push('MODIFIED', version('a', '3'));
    await processor.started(2);
    processor.finish();
    await queue.stop();
    assert.deepEqual(processor.seen, ['a@1', 'a@3'], 'and no read, which would have failed');
  });

  it('parks a cycle failed for an API that did not answer until it answers, at the debug level and with no timer, then runs the object read afresh', async (t) => {
    const { logger, lines } = recordingLogger();
    const processor = controlledProcessor();
    const api = apiComingBack();
    const reads = freshReads(version('a', '2'));
    const queue = queueOf(processor.process, {
      concurrency: 1,
      logger,
      errorDelaysS: [0],
      apiBack: api.apiBack,
      refresh: reads.refresh,
    });
    queue.push('ADDED', version('a', '1'));
    await processor.started(1);
    const timeout = t.mock.method(globalThis, 'setTimeout');
    processor.fail(new ApiUnreachable(new Error('connect ECONNREFUSED')));
    await api.waiting;
    assert.equal(timeout.mock.callCount(), 0, 'no retry on a timer');
    assert.equal(queue.oldestUnhandledSeconds() > 0, true, 'still to be handled');
    t.mock.restoreAll();
    api.back();
    await processor.started(2);
    processor.finish();
    await queue.stop();
    assert.deepEqual(processor.seen, ['a@1', 'a@2']);
    assert.equal(reads.count, 1);
    assert.deepEqual(
      lines.filter((line) => /processing/.test(line.msg)).map((line) => [line.level, line.msg]),
      [['debug', 'processing waits for the Kubernetes API to answer']],
    );
  });

  it('forgets an object deleted while it waits for the API, and does not read it when the API answers', async () => {
    const processor = controlledProcessor();
    const api = apiComingBack();
    const reads = freshReads(version('a', '2'));
    const queue = queueOf(processor.process, {
      concurrency: 1,
      apiBack: api.apiBack,
      refresh: reads.refresh,
    });
    queue.push('ADDED', version('a', '1'));
    await processor.started(1);
    processor.fail(new ApiUnreachable(new Error('connect ECONNREFUSED')));
    await api.waiting;
    assert.equal(queue.size, 1, 'kept while it waits');
    queue.push('DELETED', version('a', '3'));
    assert.equal(queue.size, 0);
    api.back();
    await new Promise((resolve) => setImmediate(resolve));
    await queue.stop();
    assert.equal(reads.count, 0);
    assert.deepEqual(processor.seen, ['a@1']);
  });

  it('runs the same state again when a cycle asks for a retry', async () => {
    const processor = controlledProcessor();
    const queue = queueOf(processor.process, { concurrency: 8 });
    queue.push('ADDED', version('a', '1'));
    await processor.started(1);
    processor.finish({ retryAfterMs: 5 });
    await processor.started(2);
    processor.finish();
    await queue.stop();
    assert.deepEqual(processor.seen, ['a@1', 'a@1']);
  });

  it('never sets a timer Node would run after 1 ms: a retry a month away is looked at again within a timer', async (t) => {
    const timeout = t.mock.method(globalThis, 'setTimeout');
    const processor = controlledProcessor();
    const { promise: finished, resolve } = Promise.withResolvers<void>();
    // Told as the cycle ends, just before its retry is set, in the same turn.
    const observer = { added: () => {}, started: () => {}, finished: () => queueMicrotask(resolve) };
    const queue = queueOf(processor.process, { concurrency: 8, observer });
    queue.push('ADDED', version('a', '1'));
    await processor.started(1);
    processor.finish({ retryAfterMs: 30 * 24 * 3600 * 1000 });
    await finished;
    await queue.stop();
    const delays = timeout.mock.calls.map((call) => Number(call.arguments[1]));
    assert.ok(delays.length > 0 && delays.every((delay) => delay <= MAX_TIMER_MS), `${delays}`);
  });

  it('parks an object waiting for a service that is down, and runs its newest state when the service is back', async () => {
    const processor = controlledProcessor();
    const queue = queueOf(processor.process, { concurrency: 8 });
    const back = Promise.withResolvers<void>();
    queue.push('ADDED', version('a', '1'));
    await processor.started(1);
    processor.finish({ wakeOn: back.promise });
    queue.push('MODIFIED', version('a', '2')); // a change meanwhile waits too
    queue.push('ADDED', version('b', '1'));
    await processor.started(2); // the queue went on with other objects, and did not run a again
    processor.finish();
    assert.deepEqual(processor.seen, ['a@1', 'b@1']);
    back.resolve();
    await processor.started(3);
    processor.finish();
    await queue.stop();
    assert.deepEqual(processor.seen, ['a@1', 'b@1', 'a@2']);
  });

  it('forgets an object once it is deleted and idle', async () => {
    const processor = controlledProcessor();
    const queue = queueOf(processor.process, { concurrency: 8 });
    queue.push('ADDED', version('a', '1'));
    await processor.started(1);
    processor.finish({ retryAfterMs: 60_000 });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(queue.size, 1);
    queue.push('DELETED', version('a', '2'));
    assert.equal(queue.size, 0);
    await queue.stop();
  });

  it('drops the states from before its own write, even when the watch delivers them after the object was idle', async () => {
    const processor = controlledProcessor();
    const refreshed: string[] = [];
    const queue = queueOf(processor.process, {
      concurrency: 8,
      consistencyTimeoutMs: 1,
      // The watch lags behind two writes (a finalizer, then the results): the API has the second.
      refresh: async (object) => {
        refreshed.push(object.metadata.uid);
        return version('a', '12');
      },
    });
    queue.push('ADDED', version('a', '10'));
    await processor.started(1);
    processor.finish({ written: '12' });
    await processor.started(2); // the fresh state, after the wait for the watch timed out
    processor.finish();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(queue.size, 0, 'idle, and forgotten');
    queue.push('MODIFIED', version('a', '11')); // the late finalizer write: stale
    queue.push('MODIFIED', version('a', '12')); // our last write: what was processed afresh
    queue.push('MODIFIED', version('a', '13')); // someone else's change
    await processor.started(3);
    processor.finish();
    await queue.stop();
    assert.deepEqual(refreshed, ['a']);
    assert.deepEqual(processor.seen, ['a@10', 'a@12', 'a@13']);
  });

  it('does not run the state from before its own write when a retry is due first', async () => {
    const processor = controlledProcessor();
    const queue = queueOf(processor.process, { concurrency: 8, consistencyTimeoutMs: 60_000 });
    queue.push('ADDED', version('a', '1'));
    await processor.started(1);
    processor.finish({ written: '2', retryAfterMs: 1 });
    await new Promise((resolve) => setTimeout(resolve, 5));
    assert.deepEqual(processor.seen, ['a@1'], 'the retry waits for the state with our write');
    queue.push('MODIFIED', version('a', '2'));
    await processor.started(2);
    processor.finish();
    await queue.stop();
    assert.deepEqual(processor.seen, ['a@1', 'a@2']);
  });

  it('forgets an object found gone when read afresh, and still drops the states from before its write that the watch shows after', async () => {
    const processor = controlledProcessor();
    let refreshed = Promise.withResolvers<void>();
    const queue = queueOf(processor.process, {
      concurrency: 8,
      consistencyTimeoutMs: 1,
      refresh: async () => {
        refreshed.resolve();
        return undefined;
      },
    });
    queue.push('ADDED', version('a', '1'));
    await processor.started(1);
    processor.finish({ written: '2' });
    await refreshed.promise;
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(queue.size, 0);
    refreshed = Promise.withResolvers<void>();
    queue.push('MODIFIED', version('a', '1'));
    queue.push('DELETED', version('a', '2'));
    processor.finish(); // a cycle it should not have started, if any
    await queue.stop();
    assert.deepEqual(processor.seen, ['a@1']);
  });

  it('drops a read afresh that a cycle overtook, on the state the watch showed meanwhile: no second cycle of that state', async () => {
    const processor = controlledProcessor();
    const reading = Promise.withResolvers<void>();
    const read = Promise.withResolvers<KubernetesObject>();
    const queue = queueOf(processor.process, {
      concurrency: 1,
      consistencyTimeoutMs: 1,
      refresh: () => {
        reading.resolve();
        return read.promise;
      },
    });
    queue.push('ADDED', version('a', '1'));
    await processor.started(1);
    processor.finish({ written: '2' });
    // The watch lags behind the write, so the object is read afresh; then the watch shows the write.
    await reading.promise;
    queue.push('MODIFIED', version('a', '2'));
    await processor.started(2);
    read.resolve(version('a', '2'));
    await new Promise((resolve) => setImmediate(resolve));
    processor.finish();
    await new Promise((resolve) => setImmediate(resolve));
    processor.finish(); // a cycle it should not have started, if any
    await queue.stop();
    assert.deepEqual(processor.seen, ['a@1', 'a@2']);
  });

  it('reads again after a failed read, and then goes on from the fresh state', async () => {
    const processor = controlledProcessor();
    let reads = 0;
    const queue = queueOf(processor.process, {
      concurrency: 8,
      consistencyTimeoutMs: 1,
      refresh: async () => {
        if (++reads === 1) throw new Error('503 Service Unavailable');
        return version('a', '2');
      },
    });
    queue.push('ADDED', version('a', '1'));
    await processor.started(1);
    processor.finish({ written: '2' });
    await processor.started(2);
    processor.finish();
    await queue.stop();
    assert.equal(reads, 2);
    assert.deepEqual(processor.seen, ['a@1', 'a@2']);
  });
});

describe('isOlder', () => {
  it('compares resourceVersions as the integers etcd issues, and never calls others older', () => {
    assert.equal(isOlder('9', '10'), true);
    assert.equal(isOlder('10', '10'), false);
    assert.equal(isOlder('11', '10'), false);
    assert.equal(isOlder('18446744073709551615', '18446744073709551616'), true);
    assert.equal(isOlder('abc', '10'), false);
    assert.equal(isOlder(undefined, '10'), false);
  });
});

describe('generated objects through the queue (property-based)', () => {
  it('handles every good object, whichever others fail their cycles, and in what order they come', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.record({ object: fc.uuid().map((uid) => version(uid, '1')), bad: fc.boolean() }), {
          minLength: 1,
          maxLength: 12,
          selector: ({ object }) => object.metadata.uid,
        }),
        fc.integer({ min: 1, max: 4 }),
        async (pushed, concurrency) => {
          const good = new Set(pushed.filter(({ bad }) => !bad).map(({ object }) => object.metadata.uid));
          const handled = new Set<string>();
          const failed = new Set<string>();
          // Every cycle has run once: each good object handled, each bad one failed (its retry a minute away).
          const { promise: allRun, resolve } = Promise.withResolvers<void>();
          const ranAll = () => handled.size + failed.size === pushed.length && resolve();
          const queue = queueOf(
            async (object) => {
              const { uid } = object.metadata;
              if (!good.has(uid)) {
                failed.add(uid);
                queueMicrotask(ranAll);
                throw new Error(`a cycle of ${uid} failed`);
              }
              handled.add(uid);
              ranAll();
              return {};
            },
            { concurrency, errorDelaysS: [60] },
          );
          for (const { object } of pushed) queue.push('ADDED', object);
          let timer: NodeJS.Timeout | undefined;
          const late = new Promise<void>((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`ran ${handled.size + failed.size} of ${pushed.length}`)),
              2000,
            );
          });
          try {
            await Promise.race([allRun, late]);
          } finally {
            clearTimeout(timer);
            await queue.stop();
          }
          assert.deepEqual([...handled].sort(), [...good].sort());
        },
      ),
      { numRuns: 1000 },
    );
  });
});

/** What happens next in a generated run of the queue against a simulated API and its watch. */
type Step =
  | { kind: 'create' }
  | { kind: 'change'; pick: number }
  | { kind: 'delete'; pick: number }
  /** The watch delivers this many of the events it holds back. */
  | { kind: 'deliver'; count: number }
  | { kind: 'outage' }
  | { kind: 'back' }
  /** Time passes: cycles, delays and reads go on for this many turns of the event loop. */
  | { kind: 'wait'; turns: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.constant({ kind: 'create' as const }),
  fc.record({ kind: fc.constant('change' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('deliver' as const), count: fc.integer({ min: 1, max: 4 }) }),
  fc.constant({ kind: 'outage' as const }),
  fc.constant({ kind: 'back' as const }),
  fc.record({ kind: fc.constant('wait' as const), turns: fc.integer({ min: 1, max: 5 }) }),
);

/** What a cycle does when the API answers: nothing to write, a write of the object, or a failure. */
type CycleChoice = 'done' | 'write' | 'fail';

/**
 * An API and its watch, simulated: objects with increasing resourceVersions, a watch that delivers its
 * events when the run says (so it lags behind the API and the queue's own writes), and outages during
 * which every cycle and read finds no one to answer.
 */
class SimulatedApi {
  readonly current = new Map<string, KubernetesObject>();
  readonly undelivered: Array<{ type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: KubernetesObject }> = [];
  down = false;
  #version = 0;
  #created = 0;
  #comeback = Promise.withResolvers<void>();

  create(): void {
    this.#store('ADDED', `object-${++this.#created}`);
  }

  change(uid: string): KubernetesObject {
    return this.#store('MODIFIED', uid);
  }

  delete(uid: string): void {
    const object = this.current.get(uid) as KubernetesObject;
    this.current.delete(uid);
    this.undelivered.push({ type: 'DELETED', object });
  }

  outage(): void {
    if (!this.down) this.#comeback = Promise.withResolvers<void>();
    this.down = true;
  }

  back(): void {
    this.down = false;
    this.#comeback.resolve();
  }

  /** As ApiComeback answers: once a probe finds the API up, or when the queue stops. */
  whenBack(signal: AbortSignal): Promise<void> {
    const { promise, resolve } = Promise.withResolvers<void>();
    signal.addEventListener('abort', () => resolve());
    if (this.down) void this.#comeback.promise.then(() => resolve());
    else setImmediate(resolve);
    return promise;
  }

  /** Throws as a client that found no one to answer. */
  answering(): void {
    if (this.down) throw new ApiUnreachable(new Error('connect ECONNREFUSED 127.0.0.1:6443'));
  }

  #store(type: 'ADDED' | 'MODIFIED', uid: string): KubernetesObject {
    const object = version(uid, String(++this.#version));
    this.current.set(uid, object);
    this.undelivered.push({ type, object });
    return object;
  }
}

describe('the queue against a simulated API, its outages and a lagging watch (property-based)', () => {
  it('ends with every object that exists handled at its newest state, no state twice; one cycle at a time, none on a state older than its write, no cycle or read after its deletion; nothing kept', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 1, maxLength: 40 }),
        fc.infiniteStream(fc.constantFrom<CycleChoice>('done', 'done', 'write', 'fail')),
        // How many turns of the event loop each cycle and each read takes.
        fc.infiniteStream(fc.integer({ min: 0, max: 3 })),
        fc.integer({ min: 1, max: 3 }),
        async (steps, choices, latencies, concurrency) => {
          const api = new SimulatedApi();
          const running = new Set<string>();
          const deleted = new Set<string>();
          /** uid → the resourceVersion of the queue's last write of it. */
          const written = new Map<string, number>();
          /** uid → the resourceVersion its last cycle that wrote nothing saw. */
          const handledAt = new Map<string, string>();
          const problems: string[] = [];
          // Writes and failures run out, so that every run ends.
          let writes = 12;
          let failures = 12;
          const turn = () => new Promise((resolve) => setTimeout(resolve, 0));
          const takeTurns = async () => {
            for (let n = latencies.next().value as number; n > 0; n--) await turn();
          };
          const queue = queueOf(
            async (object) => {
              const { uid, resourceVersion } = object.metadata;
              if (running.has(uid)) problems.push(`two cycles of ${uid} at once`);
              if (deleted.has(uid)) problems.push(`a cycle of ${uid} after its deletion was delivered`);
              if (Number(resourceVersion) < (written.get(uid) ?? 0))
                problems.push(`a cycle of ${uid} at ${resourceVersion}, older than its write`);
              running.add(uid);
              try {
                await takeTurns();
                api.answering();
                const choice = choices.next().value as CycleChoice;
                if (choice === 'fail' && failures-- > 0) throw new Error(`a cycle of ${uid} failed`);
                if (choice === 'write' && writes-- > 0) {
                  if (!api.current.has(uid)) throw new Error(`${uid} not found`);
                  const { resourceVersion: after } = api.change(uid).metadata;
                  written.set(uid, Number(after));
                  return { written: after };
                }
                if (handledAt.get(uid) === resourceVersion)
                  problems.push(`${uid} handled twice at ${resourceVersion}`);
                handledAt.set(uid, resourceVersion as string);
                return {};
              } finally {
                running.delete(uid);
              }
            },
            {
              concurrency,
              errorDelaysS: [0],
              consistencyTimeoutMs: 1,
              apiBack: (signal) => api.whenBack(signal),
              refresh: async (object) => {
                if (deleted.has(object.metadata.uid))
                  problems.push(`${object.metadata.uid} read after its deletion was delivered`);
                await takeTurns();
                api.answering();
                return api.current.get(object.metadata.uid);
              },
            },
          );
          const deliver = (count: number) => {
            for (const { type, object } of api.undelivered.splice(0, count)) {
              if (type === 'DELETED') deleted.add(object.metadata.uid);
              queue.push(type, object);
            }
          };
          try {
            for (const next of steps) {
              const uids = [...api.current.keys()];
              if (next.kind === 'create') api.create();
              else if (next.kind === 'change' && uids.length > 0)
                api.change(uids[next.pick % uids.length] as string);
              else if (next.kind === 'delete' && uids.length > 0)
                api.delete(uids[next.pick % uids.length] as string);
              else if (next.kind === 'deliver') deliver(next.count);
              else if (next.kind === 'outage') api.outage();
              else if (next.kind === 'back') api.back();
              else if (next.kind === 'wait') for (let n = 0; n < next.turns; n++) await turn();
            }
            // The API comes back and the watch catches up: the queue then settles with nothing kept.
            api.back();
            for (let turns = 0; queue.size > 0 || api.undelivered.length > 0; turns++) {
              if (turns === 2000) throw new Error(`${queue.size} objects still kept after ${turns} turns`);
              deliver(api.undelivered.length);
              await turn();
            }
          } finally {
            await queue.stop();
          }
          assert.deepEqual(problems, []);
          for (const [uid, object] of api.current)
            assert.equal(
              handledAt.get(uid),
              object.metadata.resourceVersion,
              `${uid} handled at its newest state`,
            );
        },
      ),
      { numRuns: 1000 },
    );
  });
});
