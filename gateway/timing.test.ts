import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffDelay, MAX_TIMER_MS, sleep, sleepUnlessWoken, spreadRetryAfter } from './timing.ts';

describe('sleep', () => {
  it('never sets a timer Node would run after 1 ms: a wait of a month is one of steps within a timer', async (t) => {
    const timeout = t.mock.method(globalThis, 'setTimeout');
    const stop = new AbortController();
    const slept = sleep(30 * 24 * 3600 * 1000, stop.signal);
    stop.abort();
    await slept;
    const delays = timeout.mock.calls.map((call) => Number(call.arguments[1]));
    assert.ok(delays.length > 0 && delays.every((delay) => delay <= MAX_TIMER_MS), `${delays}`);
  });
});

it('a Retry-After is waited for in full, and spread over half as much again', () => {
  const waits = Array.from({ length: 1000 }, () => spreadRetryAfter(1000));
  assert.ok(Math.min(...waits) >= 1000, 'never sooner than the server asks');
  assert.ok(Math.max(...waits) < 1500);
  assert.ok(new Set(waits).size > 900, 'the requests refused together come back apart');
  assert.equal(spreadRetryAfter(0), 0, 'no Retry-After, no wait of its own');
});

describe('sleepUnlessWoken', () => {
  it('ends when woken, says so, and tells the waker when it ended by itself', async () => {
    const wake = Promise.withResolvers<void>();
    const woken = sleepUnlessWoken(60_000, () => wake.promise);
    wake.resolve();
    assert.equal(await woken, true);

    let over: AbortSignal | undefined;
    const slept = await sleepUnlessWoken(1, (signal) => {
      over = signal;
      return new Promise((resolve) => signal.addEventListener('abort', () => resolve()));
    });
    assert.equal(slept, false, 'the time ran out first');
    assert.equal(over?.aborted, true, 'the waker was told to stop waiting');

    const stop = new AbortController();
    const stopped = sleepUnlessWoken(60_000, undefined, stop.signal);
    stop.abort();
    assert.equal(await stopped, false, 'aborted: not woken');
  });
});

describe('backoffDelay', () => {
  it('listed delays: one per failure in a row, the last repeated, `max` at most', () => {
    const listed = { delays: [1, 2, 5] };
    assert.deepEqual(
      [0, 1, 2, 3, 100].map((failures) => backoffDelay(listed, failures)),
      [1, 2, 5, 5, 5],
    );
    const capped = { delays: [1, 10, 60], max: 5 };
    assert.deepEqual(
      [0, 1, 2].map((failures) => backoffDelay(capped, failures)),
      [1, 5, 5],
    );
  });

  it('doubling delays: from the first, up to `max`, however many the failures', () => {
    const doubling = { first: 250, max: 10_000 };
    assert.deepEqual(
      [0, 1, 2, 5, 6, 2000].map((failures) => backoffDelay(doubling, failures)),
      [250, 500, 1000, 8000, 10_000, 10_000],
    );
  });

  it('jittered: each delay spread over [0.5, 1.5) times, the cap applied before', () => {
    const jittered = { first: 1000, max: 4000, jitter: true };
    const firsts = Array.from({ length: 1000 }, () => backoffDelay(jittered, 0));
    assert.ok(Math.min(...firsts) >= 500 && Math.max(...firsts) < 1500);
    assert.ok(new Set(firsts).size > 900, 'clients that failed together come back apart');
    const capped = Array.from({ length: 1000 }, () => backoffDelay(jittered, 10));
    assert.ok(Math.min(...capped) >= 2000 && Math.max(...capped) < 6000);
  });
});
