import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newTraceparent } from './invocation.ts';

describe('a new trace context', () => {
  it('is a W3C traceparent with ids never made before, across refills of the random bytes', () => {
    const made = Array.from({ length: 1000 }, newTraceparent);
    for (const traceparent of made) assert.match(traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    assert.equal(new Set(made.map((traceparent) => traceparent.slice(3, 35))).size, made.length);
    assert.equal(new Set(made.map((traceparent) => traceparent.slice(36, 52))).size, made.length);
  });
});
