import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newKey, parseStoredKeys, planKeys, publicKeys, RETIRE_AFTER_MS, type StoredKey } from './keys.ts';

const timings = { rotateAfterMs: 1_000_000, propagationMs: 10_000 };
const kids = (keys: readonly StoredKey[]) => keys.map((key) => key.kid);

describe('the signing keys plan', () => {
  it('makes the first key and signs with it at once', () => {
    const plan = planKeys([], 5_000, timings);
    assert.equal(plan.keys.length, 1);
    assert.equal(plan.signing, plan.keys[0]);
    assert.equal(plan.changed, true);
    assert.equal(plan.next, 5_000 + timings.rotateAfterMs);
  });

  it('keeps a young key as it is, and looks again when it is due for rotation', () => {
    const key = newKey(0);
    const plan = planKeys([key], 500_000, timings);
    assert.deepEqual(plan, { keys: [key], signing: key, changed: false, next: timings.rotateAfterMs });
  });

  it('rotates with overlap: the new key is published, signs once it has propagated, and the old one goes after its last tokens', () => {
    const old = newKey(0);
    const due = timings.rotateAfterMs;
    const rotated = planKeys([old], due, timings);
    assert.equal(rotated.changed, true);
    assert.equal(rotated.keys.length, 2);
    assert.equal(rotated.signing, old, 'the old key signs while the new one propagates');
    const fresh = rotated.keys[1] as StoredKey;
    assert.equal(rotated.next, due + timings.propagationMs);

    const propagating = planKeys(rotated.keys, due + timings.propagationMs - 1, timings);
    assert.equal(propagating.signing, old);
    assert.equal(propagating.changed, false);

    const switched = planKeys(rotated.keys, due + timings.propagationMs, timings);
    assert.equal(switched.signing, fresh);
    assert.deepEqual(kids(switched.keys), [old.kid, fresh.kid], 'the old key stays published for its tokens');
    assert.equal(switched.changed, false);
    assert.equal(switched.next, due + timings.propagationMs + RETIRE_AFTER_MS);

    const retired = planKeys(rotated.keys, switched.next, timings);
    assert.deepEqual(kids(retired.keys), [fresh.kid]);
    assert.equal(retired.signing, fresh);
    assert.equal(retired.changed, true);
  });

  it('takes keys in any order, and signs with the newest that has propagated', () => {
    const [a, b, c] = [newKey(0), newKey(100_000), newKey(200_000)];
    const plan = planKeys([c, a, b], 205_000, timings);
    assert.equal(plan.signing, b);
    assert.deepEqual(kids(plan.keys), [b.kid, c.kid], 'a, older than the signing key for long, is retired');
  });
});

describe('the stored keys', () => {
  it('publish only their public halves', () => {
    const key = newKey(0);
    const [published] = publicKeys([key]).keys;
    assert.deepEqual(Object.keys(published ?? {}).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x']);
    assert.equal(published?.x, key.jwk.x);
  });

  it('round-trip through their text, and a damaged text is an error naming where', () => {
    const keys = [newKey(0), newKey(1)];
    assert.deepEqual(parseStoredKeys(JSON.stringify(keys), 'Secret ns/keys'), keys);
    assert.throws(
      () => parseStoredKeys('{', 'Secret ns/keys'),
      /^Error: Secret ns\/keys: the signing keys are not JSON/,
    );
    assert.throws(
      () =>
        parseStoredKeys(
          JSON.stringify([{ kid: 'x', created: 0, jwk: publicKeys(keys).keys[0] }]),
          'Secret ns/keys',
        ),
      /signing key 0 is not \{kid, created, jwk\} with a private Ed25519 JWK/,
    );
  });
});
