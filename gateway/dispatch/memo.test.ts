import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_MEMO_BYTES } from '../../protocol/limits.ts';
import { checkMemoBound, MemoTooLarge, updatedMemo } from './memo.ts';

describe("a service's memo", () => {
  it('takes the keys an answer sets, and drops those it sets to null', () => {
    assert.deepEqual({ ...updatedMemo({ a: 1, b: 2 }, { b: null, c: 3 }) }, { a: 1, c: 3 });
  });

  it('fails an answer that would make it larger than its bound, saying by how much, and takes one that shrinks it', () => {
    const big = 'x'.repeat(MAX_MEMO_BYTES);
    assert.throws(
      () => checkMemoBound({ kept: 'y' }, { big }, 'grower'),
      (error: unknown) =>
        error instanceof MemoTooLarge &&
        /the memo of "grower" for the object would be \d+ bytes, over the 65536 a service may keep per object/.test(
          error.message,
        ),
    );
    const almost = 'x'.repeat(MAX_MEMO_BYTES - 20);
    checkMemoBound({}, { almost }, 'fits');
    checkMemoBound({ big }, { big: null }, 'shrinks');
  });
});
