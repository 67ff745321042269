import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Budget, BudgetStalled, Budgets } from './budget.ts';

/** Whether `promise` has settled once the microtasks queued now have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('Budget', () => {
  it('takes at once what fits, and makes the rest wait until enough is given back', async () => {
    const budget = new Budget(10);
    await budget.acquire(6);
    const waiting = budget.acquire(6);
    assert.equal(await settled(waiting), false);
    assert.deepEqual([budget.used, budget.waits], [6, 1]);
    budget.release(6);
    await waiting;
    assert.equal(budget.used, 6);
  });

  it('serves those who wait in their order: a small ask that would fit waits behind a large one (no starvation)', async () => {
    const budget = new Budget(10);
    await budget.acquire(8);
    const order: string[] = [];
    const large = budget.acquire(5).then(() => order.push('large'));
    const small = budget.acquire(1).then(() => order.push('small'));
    assert.equal(await settled(small), false, 'the small ask fits, but the large one came first');
    budget.release(8);
    await Promise.all([large, small]);
    assert.deepEqual(order, ['large', 'small']);
    assert.equal(budget.used, 6);
  });

  it('lets an ask whose signal aborts leave the line having taken nothing, and serves the next', async () => {
    const budget = new Budget(10);
    await budget.acquire(9);
    const giving = new AbortController();
    const large = budget.acquire(5, giving.signal);
    const small = budget.acquire(1);
    giving.abort(new Error('deadline'));
    await assert.rejects(large, /deadline/);
    await small;
    assert.equal(budget.used, 10, 'the 9 held and the small ask: nothing of the one that left');
    await assert.rejects(budget.acquire(1, AbortSignal.abort(new Error('already'))), /already/);
  });

  it('refuses an ask larger than the whole budget, which could never be served', async () => {
    await assert.rejects(new Budget(4).acquire(5), /5 is more than the whole budget, 4/);
    assert.throws(() => new Budget(0), /a whole number above 0, not 0/);
  });

  it('take: takes only what fits now, and counts a refusal as a wait', () => {
    const budget = new Budget(10);
    assert.equal(budget.take(7), true);
    assert.equal(budget.take(4), false);
    assert.deepEqual([budget.used, budget.waits], [7, 1]);
    budget.release(7);
    assert.equal(budget.take(10), true);
  });

  it('breaks a stall: when all in use is held by asks waiting for more, the youngest gives way', async () => {
    const budget = new Budget(10);
    // Two replies read bit by bit, each holding part of the budget and wanting more than is left.
    await budget.acquire(6);
    await budget.acquire(4);
    const older = budget.acquire(3, undefined, 6);
    const younger = budget.acquire(3, undefined, 4);
    await assert.rejects(younger, BudgetStalled);
    budget.release(4); // the younger gives back what it held, as its reader does when it fails
    await older;
    assert.equal(budget.used, 9);
  });

  it('is no stall while something in use is held by one who will give it back', async () => {
    const budget = new Budget(10);
    await budget.acquire(5); // a reply with a declared length, being read: it will finish
    await budget.acquire(5);
    const waiting = budget.acquire(3, undefined, 5);
    assert.equal(await settled(waiting), false);
    budget.release(5);
    await waiting;
  });

  it('serves those waiting as a larger limit allows', async () => {
    const budget = new Budget(2);
    await budget.acquire(2);
    const waiting = budget.acquire(1);
    budget.limit = 3;
    await waiting;
    assert.equal(budget.used, 3);
  });
});

describe('Budgets', () => {
  const limits = {
    maxReplyBytes: 100,
    replyBytesPerService: 100,
    concurrencyPerService: 4,
    daemonsPerService: 2,
    indexBytesPerService: 50,
  };

  it("keeps one service's budgets apart from another's, and tells each wait by service and budget", async () => {
    const waits: string[] = [];
    const budgets = new Budgets(limits, (service, budget) => waits.push(`${service} ${budget}`));
    const hungry = budgets.of('hungry');
    await hungry.replyBytes.acquire(100);
    const waiting = hungry.replyBytes.acquire(1);
    await budgets.of('other').replyBytes.acquire(100);
    assert.deepEqual(waits, ['hungry reply_bytes']);
    assert.equal(budgets.of('hungry'), hungry, 'the same budgets for the same name');
    assert.deepEqual(
      [...budgets.readings(['hungry', 'unknown'])].map(({ budget, used, limit }) => [budget, used, limit]),
      [
        ['reply_bytes', 100, 100],
        ['calls', 0, 4],
        ['daemons', 0, 2],
        ['index_bytes', 0, 50],
      ],
    );
    hungry.replyBytes.release(100);
    await waiting;
  });

  it('refuses a budget of reply bytes that cannot hold the longest reply', () => {
    assert.throws(
      () => new Budgets({ ...limits, maxReplyBytes: 101 }),
      /calls\.replyBytesPerService \(100\) must hold at least one reply of calls\.maxReplyBytes \(101\)/,
    );
  });

  it("gives a service its own calls' limit, when it has one", () => {
    const budgets = new Budgets(limits);
    assert.equal(budgets.of('own', 16).calls.limit, 16);
    assert.equal(budgets.of('own', 8).calls.limit, 8);
    assert.equal(budgets.of('plain').calls.limit, 4);
  });
});
