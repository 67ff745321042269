import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { Ring } from './ring.ts';

const KEYS = Array.from({ length: 3000 }, () => randomUUID());

function shares(ring: Ring): Map<string, number> {
  const counts = new Map<string, number>();
  for (const key of KEYS) {
    const owner = ring.ownerOf(key) as string;
    counts.set(owner, (counts.get(owner) ?? 0) + 1);
  }
  return counts;
}

describe('the sharding ring', () => {
  it('gives each of three members between 20% and 47% of the objects', () => {
    const counts = shares(new Ring(['gateway-a', 'gateway-b', 'gateway-c']));
    assert.deepEqual([...counts.keys()].sort(), ['gateway-a', 'gateway-b', 'gateway-c']);
    for (const [member, count] of counts) {
      const share = count / KEYS.length;
      assert.ok(share >= 0.2 && share <= 0.47, `${member}: ${(share * 100).toFixed(1)}%`);
    }
  });

  it('is the same whatever the order the members come in, and however often it is made', () => {
    const one = new Ring(['c', 'a', 'b']);
    const other = new Ring(['a', 'b', 'c', 'a']);
    for (const key of KEYS) assert.equal(one.ownerOf(key), other.ownerOf(key));
  });

  it('moves objects only to a member that joins, and only from one that leaves', () => {
    const three = new Ring(['a', 'b', 'c']);
    const four = new Ring(['a', 'b', 'c', 'd']);
    let moved = 0;
    for (const key of KEYS) {
      const before = three.ownerOf(key);
      const after = four.ownerOf(key);
      if (before !== after) {
        assert.equal(after, 'd', `${key} moved from ${before} to ${after}`);
        moved += 1;
      }
    }
    assert.ok(moved > KEYS.length * 0.15 && moved < KEYS.length * 0.35, `${moved} moved to the new member`);
    const two = new Ring(['a', 'c']);
    for (const key of KEYS) {
      if (three.ownerOf(key) !== 'b') assert.equal(two.ownerOf(key), three.ownerOf(key));
    }
  });

  it('has no owner when it has no member', () => {
    assert.equal(new Ring([]).ownerOf('x'), undefined);
  });
});
