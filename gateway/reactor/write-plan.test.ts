import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonCopy } from '../../protocol/json.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import { StateStorage } from '../state/storage.ts';
import type { Cause } from './model.ts';
import { emptyEffects, type Folded } from './outcomes.ts';
import { planWrites } from './write-plan.ts';

const inStatus = new StateStorage('status', DEFAULT_IDENTITY);
const cause = (reason: Cause['reason']): Cause => ({
  reason,
  new: { spec: { a: 1 } },
  diff: [],
  essence: '{"spec":{"a":1}}',
  firstSight: false,
  existedAtStart: false,
});
const record = { started: '2026-11-23T00:00:00Z', retries: 1, message: 'not yet' };
const progress = { 'svc/create_fn': record };
/** Progress as read from an object, and none. */
const stored = { progress };
const none = {};

function folded(state: Folded['state'], result?: unknown): Folded {
  const effects = emptyEffects();
  if (result !== undefined) {
    effects.changes.status.create_fn = result;
    effects.results.push(['create_fn']);
  }
  return { progress, effects, state };
}

// The changes are bare records (no prototype): compared as the JSON they are written as.
describe('the write plan', () => {
  it('writes the progress while a cause is in progress, and no record', () => {
    const plan = planWrites(cause('create'), folded('in progress'), none, inStatus);
    assert.deepEqual(jsonCopy(plan.changes.status), {
      causeway: { progress: { svc: { create_fn: record } } },
    });
    assert.equal(plan.recorded, undefined);
    assert.equal(plan.releaseFinalizer, false);
  });

  it('writes result and record together once the cause is handled, purging stored progress', () => {
    const plan = planWrites(cause('update'), folded('finished', { ok: true }), stored, inStatus);
    assert.deepEqual(jsonCopy(plan.changes.status), {
      create_fn: { ok: true },
      causeway: { essence: '{"spec":{"a":1}}', progress: null },
    });
    assert.deepEqual([plan.recorded, plan.results], ['{"spec":{"a":1}}', [['create_fn']]]);
  });

  it('writes no record for a handled deletion: the finalizer comes off instead', () => {
    const plan = planWrites(cause('delete'), folded('finished'), stored, inStatus);
    assert.deepEqual(jsonCopy(plan.changes), { status: {}, object: {} });
    assert.equal(plan.releaseFinalizer, true);
  });

  it('writes nothing for an untouched object', () => {
    const plan = planWrites(cause('create'), folded('untouched'), none, inStatus);
    assert.deepEqual([jsonCopy(plan.changes), plan.releaseFinalizer], [{ status: {}, object: {} }, false]);
  });

  it('leaves the effects it was given as they were', () => {
    const given = folded('finished', { ok: true });
    planWrites(cause('create'), given, none, inStatus);
    assert.deepEqual(jsonCopy(given.effects.changes.status), { create_fn: { ok: true } });
  });
});
