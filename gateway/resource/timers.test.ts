import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HandlerSpec } from '../../protocol/index.ts';
import { idleUntil, nextCallAt } from './timers.ts';

const timer = (options: HandlerSpec['options']): HandlerSpec => ({
  id: 'tick',
  kind: 'timer',
  resource: { name: 'kopfexamples' },
  options,
});

describe('nextCallAt', () => {
  it('waits an interval after the call ends', () => {
    assert.equal(nextCallAt(timer({ interval: 10 }), 0, 1000, 4000), 14_000);
  });

  it('keeps a sharp cadence from the first call, whatever each call takes', () => {
    const sharp = timer({ interval: 10, sharp: true });
    assert.equal(nextCallAt(sharp, 1000, 1000, 4000), 11_000);
    assert.equal(nextCallAt(sharp, 1000, 11_000, 11_500), 21_000);
  });

  it('skips the ticks a sharp call overran rather than calling at once to catch up', () => {
    assert.equal(nextCallAt(timer({ interval: 10, sharp: true }), 1000, 1000, 25_000), 31_000);
  });
});

describe('idleUntil', () => {
  it('is the last change plus the idle time, or the change itself without one', () => {
    assert.equal(idleUntil(timer({ interval: 1, idle: 5 }), 2000), 7000);
    assert.equal(idleUntil(timer({ interval: 1 }), 2000), 2000);
  });
});
