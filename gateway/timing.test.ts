import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_TIMER_MS, sleep } from './timing.ts';

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
