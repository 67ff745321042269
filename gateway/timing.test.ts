import assert from 'node:assert/strict';
import test from 'node:test';
import { spreadRetryAfter } from './timing.ts';

test('a Retry-After is waited for in full, and spread over half as much again', () => {
  const waits = Array.from({ length: 1000 }, () => spreadRetryAfter(1000));
  assert.ok(Math.min(...waits) >= 1000, 'never sooner than the server asks');
  assert.ok(Math.max(...waits) < 1500);
  assert.ok(new Set(waits).size > 900, 'the requests refused together come back apart');
  assert.equal(spreadRetryAfter(0), 0, 'no Retry-After, no wait of its own');
});
