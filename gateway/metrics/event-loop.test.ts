import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { delaysStoodFor, EventLoopSampler, intervalDelays, threadCpuClock } from './event-loop.ts';

describe('intervalDelays', () => {
  it('is nothing but the timer granularity when the timer runs on time', () => {
    assert.deepEqual(intervalDelays(10.5, 0.05, 10), { delayMs: 0.5, ownMs: 0.05 });
    assert.deepEqual(intervalDelays(9.5, 0.05, 10), { delayMs: 0, ownMs: 0 }, 'early is not late');
  });

  it('counts the lateness as own when the thread ran through it', () => {
    assert.deepEqual(intervalDelays(110, 100, 10), { delayMs: 100, ownMs: 100 });
    assert.deepEqual(intervalDelays(30, 25, 10), { delayMs: 20, ownMs: 20 }, 'never more than the delay');
  });

  it('leaves out what the thread did not run: a wait for a CPU is a delay, not an own one', () => {
    assert.deepEqual(intervalDelays(210, 3, 10), { delayMs: 200, ownMs: 3 });
    assert.deepEqual(intervalDelays(210, -1, 10), { delayMs: 200, ownMs: 0 }, 'a clock that went back');
  });
});

describe('delaysStoodFor', () => {
  it('is the delay alone when it is shorter than two intervals', () => {
    assert.deepEqual(delaysStoodFor(0.4, 10), [0.4]);
    assert.deepEqual(delaysStoodFor(19, 10), [19]);
  });

  it('adds a run for each interval a pause kept the timer from, each an interval less late', () => {
    assert.deepEqual(delaysStoodFor(20, 10), [20, 10]);
    assert.deepEqual(delaysStoodFor(95, 10), [95, 85, 75, 65, 55, 45, 35, 25, 15]);
  });
});

describe('EventLoopSampler', () => {
  const pause = (ms: number) => new Promise((settle) => setTimeout(settle, ms));

  /** The largest delay and own delay (ms) the sampler records over `block`, which holds the loop. */
  async function recordedOver(block: () => void): Promise<{ delay: number; own: number }> {
    const recorded = { delay: 0, own: 0 };
    const sampler = new EventLoopSampler(({ delayMs, ownMs = Number.NaN }) => {
      recorded.delay = Math.max(recorded.delay, delayMs);
      recorded.own = Math.max(recorded.own, ownMs);
    }, threadCpuClock());
    sampler.start();
    try {
      await pause(50);
      block();
      await pause(50);
    } finally {
      await sampler.stop();
    }
    return recorded;
  }

  it('records a loop held by its own work as a delay and an own delay', async () => {
    const { delay, own } = await recordedOver(() => {
      const until = performance.now() + 200;
      while (performance.now() < until);
    });
    // The busy loop runs on a CPU for at least some of its 200 ms, even on a busy machine.
    assert.ok(delay > 150, `delay ${delay} ms`);
    assert.ok(own > 100, `own delay ${own} ms`);
  });

  it('records a loop held without running (asleep, as it is while waiting for a CPU) as a delay only', async () => {
    const { delay, own } = await recordedOver(() => {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    });
    assert.ok(delay > 150, `delay ${delay} ms`);
    assert.ok(own < 20, `own delay ${own} ms`);
  });
});
