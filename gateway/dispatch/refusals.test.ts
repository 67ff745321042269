import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Refusals } from './refusals.ts';

describe('Refusals', () => {
  it('says why a service is refused, each cause apart, and tells of each change once', () => {
    const refusals = new Refusals();
    const told: string[] = [];
    refusals.onChange((service) => told.push(service));
    assert.equal(refusals.refuse('bad', 'manifest', 'beyond its pin'), true);
    assert.equal(refusals.refuse('bad', 'manifest', 'beyond its pin'), false); // no news
    refusals.refuse('bad', 'webhooks', 'the apiserver refuses its validating webhooks');
    assert.equal(refusals.why('bad'), 'beyond its pin; the apiserver refuses its validating webhooks');
    assert.deepEqual(refusals.all(), {
      bad: 'beyond its pin; the apiserver refuses its validating webhooks',
    });
    assert.equal(refusals.why('good'), undefined);
    assert.equal(refusals.clear('good', 'manifest'), false);
    refusals.clear('bad', 'manifest');
    assert.equal(refusals.why('bad'), 'the apiserver refuses its validating webhooks');
    refusals.clear('bad', 'webhooks');
    assert.equal(refusals.why('bad'), undefined);
    assert.deepEqual(refusals.all(), {});
    assert.deepEqual(told, ['bad', 'bad', 'bad', 'bad']);
  });

  it('reads 1 for a service while it is refused, and 0 once it is served again', () => {
    const refusals = new Refusals();
    assert.deepEqual([...refusals.readings()], []);
    refusals.refuse('bad', 'manifest', 'malformed');
    refusals.refuse('worse', 'manifest', 'malformed');
    refusals.clear('bad', 'manifest');
    assert.deepEqual(
      [...refusals.readings()],
      [
        ['bad', false],
        ['worse', true],
      ],
    );
    // A service removed is read no more.
    refusals.forget('worse');
    refusals.forget('bad');
    assert.deepEqual([...refusals.readings()], []);
    assert.equal(refusals.why('worse'), undefined);
  });
});
