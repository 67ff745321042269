import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { batched, CallBatches, type EncodedCall } from './batches.ts';

const call = (json: string): EncodedCall => ({ json, traceparent: undefined });

/** A CallBatches whose sends are recorded and answered with each call's JSON, upper-cased. */
function recorded(limits = { calls: 10, bytes: 1000 }) {
  const sent: { calls: string[]; timeoutMs: number }[] = [];
  const batches = new CallBatches(async (calls, timeoutMs) => {
    sent.push({ calls: calls.map((one) => one.json), timeoutMs });
    return calls.map((one) => one.json.toUpperCase());
  }, limits);
  return { batches, sent };
}

describe('batched', () => {
  it('cuts calls into batches of at most so many calls and bytes, in order', () => {
    const calls = ['aa', 'bb', 'cc', 'dd', 'ee'].map(call);
    const json = (batches: EncodedCall[][]) => batches.map((batch) => batch.map((one) => one.json));
    assert.deepEqual(json(batched(calls, { calls: 2, bytes: 100 })), [['aa', 'bb'], ['cc', 'dd'], ['ee']]);
    assert.deepEqual(json(batched(calls, { calls: 10, bytes: 5 })), [['aa', 'bb'], ['cc', 'dd'], ['ee']]);
  });

  it('sends a call larger than the byte limit alone', () => {
    const batches = batched(['a', 'a'.repeat(50), 'b'].map(call), { calls: 10, bytes: 10 });
    assert.deepEqual(
      batches.map((batch) => batch.length),
      [1, 1, 1],
    );
  });
});

describe('CallBatches', () => {
  it('sends the calls of one turn together and answers each with its own answer', async () => {
    const { batches, sent } = recorded();
    const answers = await Promise.all(
      ['a', 'b', 'c'].map((json) => batches.add(call(json), 1000, 'create a')),
    );
    assert.deepEqual(answers, ['A', 'B', 'C']);
    assert.deepEqual(sent, [{ calls: ['a', 'b', 'c'], timeoutMs: 1000 }]);
  });

  it('sends the calls of a later turn in a batch of their own', async () => {
    const { batches, sent } = recorded();
    const first = batches.add(call('a'), 1000, 'create a');
    await new Promise((resolve) => setImmediate(resolve));
    const second = batches.add(call('b'), 1000, 'create a');
    assert.deepEqual(await Promise.all([first, second]), ['A', 'B']);
    assert.deepEqual(
      sent.map((batch) => batch.calls),
      [['a'], ['b']],
    );
  });

  it('keeps calls of other handlers or deadlines apart, and within its limits', async () => {
    const { batches, sent } = recorded({ calls: 2, bytes: 1000 });
    await Promise.all([
      batches.add(call('a'), 1000, 'create a'),
      batches.add(call('b'), 50, 'create a'),
      batches.add(call('c'), 1000, 'create a'),
      batches.add(call('d'), 1000, 'create a'),
      batches.add(call('e'), 1000, 'create a b'),
    ]);
    assert.deepEqual(sent, [
      { calls: ['a', 'c'], timeoutMs: 1000 },
      { calls: ['d'], timeoutMs: 1000 },
      { calls: ['b'], timeoutMs: 50 },
      { calls: ['e'], timeoutMs: 1000 },
    ]);
  });

  it('fails each call of a batch that could not be sent, with its error', async () => {
    const batches = new CallBatches(
      async () => {
        throw new Error('unreachable');
      },
      { calls: 10, bytes: 1000 },
    );
    const results = await Promise.allSettled([
      batches.add(call('a'), 1000, 'create a'),
      batches.add(call('b'), 1000, 'create a'),
    ]);
    assert.deepEqual(
      results.map((result) => result.status === 'rejected' && (result.reason as Error).message),
      ['unreachable', 'unreachable'],
    );
  });
});
