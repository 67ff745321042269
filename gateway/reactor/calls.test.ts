import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HandlerSpec } from '../../protocol/index.ts';
import { idempotencyKey } from '../dispatch/calls.ts';
import { dueHandler } from './calls.ts';
import type { DueCall } from './model.ts';

const spec: HandlerSpec = {
  id: 'create_fn',
  kind: 'create',
  resource: { group: 'kopf.dev', name: 'kopfexamples' },
};
const call = (service: string, retries = 0): DueCall<string> => ({
  service,
  spec,
  progress: { started: '2026-12-07T00:00:00.000Z', retries },
});
const stored = { essence: '{"spec":{}}' };
const keyOf = (due: DueCall<string>, shared: boolean) =>
  dueHandler(due, 'uid-1', 'create', stored, shared).idempotencyKey;

describe("a due handler's idempotency key", () => {
  it('is the same at every attempt at one change', () => {
    assert.equal(keyOf(call('billing', 0), false), keyOf(call('billing', 3), false));
  });

  it("is each service's own where two bind one id on the resource", () => {
    assert.notEqual(keyOf(call('billing'), true), keyOf(call('shipping'), true));
  });

  it('is, for a service alone with its id, the key it always had: a change in flight keeps it across an upgrade', () => {
    assert.equal(
      keyOf(call('billing'), false),
      idempotencyKey('uid-1', 'create_fn', 'create', stored.essence),
    );
    assert.equal(keyOf(call('billing'), false), keyOf(call('shipping'), false));
  });
});
