import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_IDENTITY } from '../../identity.ts';
import { identityOf } from './identity.ts';

describe('identityOf', () => {
  it('defaults to the gateway identity', () => {
    assert.deepEqual(identityOf({}), DEFAULT_IDENTITY);
  });
});
