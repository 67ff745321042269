/**
 * A service's memo of an object (the protocol's `memo`): what its handlers keep between calls, in
 * the gateway's memory, each service's apart. An answer's updates set keys, `null` removes one; a
 * memo is bounded (MAX_MEMO_BYTES as JSON), so that no service grows the gateway's memory without end.
 */

import { bareRecord } from '../../protocol/json.ts';
import { MAX_MEMO_BYTES } from '../../protocol/limits.ts';

/** Applies a service's memo updates: `null` removes a key. A bare record: its keys reach no prototype. */
export function updatedMemo(
  memo: Record<string, unknown> | undefined,
  updates: Record<string, unknown>,
): Record<string, unknown> {
  const updated = bareRecord(memo);
  for (const key of Object.keys(updates)) {
    const value = updates[key];
    if (value === null) delete updated[key];
    else updated[key] = value;
  }
  return updated;
}

/** A memo over its bound: the call whose answer makes it so fails, and nothing of its answer is kept. */
export class MemoTooLarge extends Error {
  override name = 'MemoTooLarge';
}

/** Throws MemoTooLarge when `updates` would make `service`'s memo of the object larger than its bound. */
export function checkMemoBound(
  memo: Record<string, unknown> | undefined,
  updates: Record<string, unknown>,
  service: string,
): void {
  const bytes = Buffer.byteLength(JSON.stringify(updatedMemo(memo, updates)));
  if (bytes > MAX_MEMO_BYTES) {
    throw new MemoTooLarge(
      `the memo of "${service}" for the object would be ${bytes} bytes, over the ${MAX_MEMO_BYTES} a service may keep per object: its answer is not applied`,
    );
  }
}
