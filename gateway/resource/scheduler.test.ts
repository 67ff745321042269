import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { Scheduler } from './scheduler.ts';

describe('Scheduler', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 }));
  afterEach(() => mock.timers.reset());

  function recorder() {
    const fired: string[][] = [];
    const scheduler = new Scheduler<string>((items) => fired.push(items), Date.now);
    return { fired, scheduler };
  }

  it('hands over each item once its time has come, earliest first, those due together at once', () => {
    const { fired, scheduler } = recorder();
    scheduler.schedule('c', 300);
    scheduler.schedule('a', 100);
    scheduler.schedule('b', 100);
    mock.timers.tick(99);
    assert.deepEqual(fired, []);
    mock.timers.tick(1);
    assert.deepEqual(fired, [['a', 'b']]);
    mock.timers.tick(200);
    assert.deepEqual(fired, [['a', 'b'], ['c']]);
    assert.equal(scheduler.size, 0);
  });

  it('takes the latest time given for an item, sooner or later, and forgets a cancelled one', () => {
    const { fired, scheduler } = recorder();
    scheduler.schedule('later', 100);
    scheduler.schedule('later', 500);
    scheduler.schedule('sooner', 400);
    scheduler.schedule('sooner', 50);
    scheduler.schedule('cancelled', 60);
    scheduler.cancel('cancelled');
    mock.timers.tick(100);
    assert.deepEqual(fired, [['sooner']]);
    mock.timers.tick(400);
    assert.deepEqual(fired, [['sooner'], ['later']]);
    assert.equal(scheduler.has('cancelled'), false);
  });

  it('hands over each of ten thousand items, rescheduled many times, once', () => {
    const { fired, scheduler } = recorder();
    for (let round = 0; round < 5; round++) {
      for (let index = 0; index < 10_000; index++) scheduler.schedule(`object-${index}`, 1000 + index);
    }
    assert.equal(scheduler.size, 10_000);
    mock.timers.tick(1000 + 9_999);
    assert.equal(fired.flat().length, 10_000);
    assert.equal(new Set(fired.flat()).size, 10_000);
  });

  it('calls nothing after it is stopped', () => {
    const { fired, scheduler } = recorder();
    scheduler.schedule('a', 10);
    scheduler.stop();
    scheduler.schedule('b', 10);
    mock.timers.tick(100);
    assert.deepEqual(fired, []);
  });
});
