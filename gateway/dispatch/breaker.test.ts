import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../logging.ts';
import { CircuitBreaker, LONGEST_PROBE_DELAY_S } from './breaker.ts';

function breakerWith(probe: () => Promise<void>, probeDelaysS: readonly number[] = [0.001]) {
  const lines: string[] = [];
  const changes: Array<string | undefined> = [];
  const breaker: CircuitBreaker = new CircuitBreaker({
    threshold: 3,
    probeDelaysS,
    probe,
    logger: createLogger({ level: 'info', sink: { write: (line) => lines.push(line) } }).child({
      service: 'billing',
      url: 'http://billing:8080',
    }),
    onChange: () => changes.push(breaker.down),
  });
  return { breaker, lines, changes };
}

describe('circuit breaker', () => {
  it('opens after the threshold of unreachable calls in a row, not before, and a success resets the count', () => {
    const { breaker, lines, changes } = breakerWith(() => new Promise(() => {}));
    breaker.unreachable('ECONNREFUSED');
    breaker.unreachable('ECONNREFUSED');
    breaker.succeeded();
    breaker.unreachable('ECONNREFUSED');
    breaker.unreachable('ECONNREFUSED');
    assert.equal(breaker.down, undefined);
    breaker.unreachable('no answer within 30000 ms');
    assert.equal(breaker.down, 'no answer within 30000 ms');
    assert.deepEqual(changes, ['no answer within 30000 ms'], 'told once, with the reason');
    assert.equal(lines.length, 1);
    assert.match(
      lines[0] ?? '',
      /WARNING +function service down: its calls wait, and nothing is written for them, until its health check answers service=billing url=http:\/\/billing:8080 failures=3 err="no answer within 30000 ms"$/m,
    );
    breaker.close();
  });

  it('asks the health check on a backoff while open, and closes, waking the waiting, at its first answer', async () => {
    let probes = 0;
    const healthy = Promise.withResolvers<void>();
    const { breaker, lines, changes } = breakerWith(async () => {
      probes++;
      if (probes < 3) throw new Error('ECONNREFUSED');
      healthy.resolve();
    });
    for (let call = 0; call < 3; call++) breaker.unreachable('ECONNREFUSED');
    const waiting = breaker.recovered();
    await waiting;
    await healthy.promise;
    assert.equal(probes, 3);
    assert.equal(breaker.down, undefined);
    assert.deepEqual(changes, ['ECONNREFUSED', undefined], 'told when it opened and when it closed');
    assert.match(
      lines.join(''),
      /INFO +function service back: its calls resume service=billing url=http:\/\/billing:8080 downSeconds=\d+$/m,
    );
    await breaker.recovered(); // closed: at once
  });

  it('asks the health check every 5 s at the most, however long the backoff, so that a return is found soon', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let probes = 0;
    const { breaker } = breakerWith(async () => {
      probes++;
      throw new Error('ECONNREFUSED');
    }, [60]);
    t.after(() => breaker.close());
    for (let call = 0; call < 3; call++) breaker.unreachable('ECONNREFUSED');
    for (let probe = 1; probe <= 3; probe++) {
      t.mock.timers.tick(LONGEST_PROBE_DELAY_S * 1000 - 1);
      assert.equal(probes, probe - 1, 'not before its delay');
      t.mock.timers.tick(1);
      assert.equal(probes, probe, `probe ${probe} ${LONGEST_PROBE_DELAY_S} s after the one before, not 60`);
      await new Promise(setImmediate); // its failure schedules the next
    }
  });

  it('lets whoever waits go when it is closed for good', async () => {
    const { breaker } = breakerWith(() => new Promise(() => {}));
    for (let call = 0; call < 3; call++) breaker.unreachable('ECONNREFUSED');
    const waiting = breaker.recovered();
    breaker.close();
    await waiting;
    breaker.unreachable('ECONNREFUSED');
    assert.equal(breaker.down, undefined, 'a closed breaker opens no more');
  });
});
