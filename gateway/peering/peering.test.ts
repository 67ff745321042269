import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FencedOut } from '../manager/role.ts';
import { DEFAULT_SETTINGS } from '../settings.ts';
import { writeLeave } from './peering.ts';

const settings = DEFAULT_SETTINGS.peering; // 15 s lease, 10 s renew deadline, 2 s between renewals

describe('writeLeave: how a peering gateway may write', () => {
  it('writes as it is while it holds its pipelines and renews on time', () => {
    assert.equal(writeLeave(true, 0, settings), 'free');
    assert.equal(writeLeave(true, 3999, settings), 'free');
  });

  it('guards its writes with their resourceVersion once a renewal is overdue', () => {
    assert.equal(writeLeave(true, 4000, settings), 'guarded');
    assert.equal(writeLeave(true, 9999, settings), 'guarded');
  });

  it('refuses to write from the renew deadline on, and when it holds no pipeline', () => {
    assert.throws(() => writeLeave(true, 10_000, settings), FencedOut);
    assert.throws(() => writeLeave(false, 0, settings), /no longer leads/);
  });
});
