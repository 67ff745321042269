import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { idempotencyKey } from './calls.ts';

describe('idempotencyKey', () => {
  it('is the same for the same parts as every version before it made it, so a repeat is still known', () => {
    // The first 32 base64url characters of the SHA-256 of the parts joined by NUL.
    assert.equal(idempotencyKey('uid-1', 'create_fn', 'bench'), 'wDyqsBpxYxLx6yQCgBvZ2DfCPY1HHbYr');
  });

  it('tells parts apart from the same text split elsewhere', () => {
    assert.notEqual(idempotencyKey('ab', 'c'), idempotencyKey('a', 'bc'));
    assert.equal(idempotencyKey('ab', 'c').length, 32);
  });
});
