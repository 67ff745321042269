import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Serial } from './serial.ts';

describe('Serial', () => {
  it('runs one task at a time, in the order given, each once the one before has settled', async () => {
    const serial = new Serial();
    const events: string[] = [];
    const first = Promise.withResolvers<void>();
    const one = serial.run(async () => {
      events.push('one starts');
      await first.promise;
      events.push('one ends');
      return 1;
    });
    const two = serial.run(async () => {
      events.push('two starts');
      return 2;
    });
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(events, ['one starts'], 'the second waits for the first');
    first.resolve();
    assert.deepEqual(await Promise.all([one, two]), [1, 2]);
    assert.deepEqual(events, ['one starts', 'one ends', 'two starts']);
  });

  it("gives a task's rejection to its caller only: the next task runs all the same", async () => {
    const serial = new Serial();
    const failed = serial.run(() => Promise.reject(new Error('no')));
    const next = serial.run(async () => 'ran');
    await assert.rejects(failed, /no/);
    assert.equal(await next, 'ran');
    const thrown = serial.run(() => {
      throw new Error('at once');
    });
    await assert.rejects(thrown, /at once/);
    assert.equal(await serial.run(async () => 'still runs'), 'still runs');
  });

  it('is busy until the last task given has settled, and idle() waits for it without its failure', async () => {
    const serial = new Serial();
    assert.equal(serial.busy, false);
    await serial.idle();
    const gate = Promise.withResolvers<void>();
    const first = serial.run(() => gate.promise);
    const second = serial.run(() => Promise.reject(new Error('second failed')));
    second.catch(() => {});
    assert.equal(serial.busy, true);
    let idle = false;
    const waited = serial.idle().then(() => {
      idle = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(idle, false, 'not idle while a task runs');
    gate.resolve();
    await first;
    await waited;
    assert.equal(serial.busy, false, 'both settled, the second by failing');
  });
});
