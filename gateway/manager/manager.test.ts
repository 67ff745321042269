import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../logging.ts';
import { Components, component } from './manager.ts';

function recorder() {
  const lines: string[] = [];
  const logger = createLogger({ sink: { write: (line) => lines.push(line) } });
  const events: string[] = [];
  const part = (name: string, failing = false, leaderOnly = false) =>
    component(name, leaderOnly, {
      start: () => {
        events.push(`start ${name}`);
      },
      stop: async () => {
        events.push(`stop ${name}`);
        if (failing) throw new Error('stuck');
      },
    });
  const leaderPart = (name: string) => part(name, false, true);
  return { lines, logger, events, part, leaderPart };
}

describe('components', () => {
  it('start in the order they were added and stop in the reverse order', async () => {
    const { logger, events, part } = recorder();
    const components = new Components(logger);
    await components.add(part('namespaces'));
    await components.add(part('queue'));
    await components.add(part('watch'));
    await components.start();
    await components.stop();
    assert.deepEqual(events, [
      'start namespaces',
      'start queue',
      'start watch',
      'stop watch',
      'stop queue',
      'stop namespaces',
    ]);
  });

  it('start a part added after the start at once, and stop it first', async () => {
    const { logger, events, part } = recorder();
    const components = new Components(logger);
    await components.add(part('services'));
    await components.start();
    await components.add(part('late resource'));
    await components.stop();
    assert.deepEqual(events, [
      'start services',
      'start late resource',
      'stop late resource',
      'stop services',
    ]);
  });

  it('stop every part even when one fails to stop, and say which', async () => {
    const { lines, logger, events, part } = recorder();
    const components = new Components(logger);
    await components.add(part('services'));
    await components.add(part('watch', true));
    await components.start();
    await components.stop();
    assert.deepEqual(events.slice(-2), ['stop watch', 'stop services']);
    assert.match(lines.join(''), /stopping a part failed part=watch err=stuck/);
  });

  it('refuse a part once stopping', async () => {
    const { logger, part } = recorder();
    const components = new Components(logger);
    await components.stop();
    await assert.rejects(components.add(part('late')), /the gateway is stopping/);
  });

  it('run the leader-only parts only while leading: stopped newest first when following, started in order when leading', async () => {
    const { logger, events, part, leaderPart } = recorder();
    const components = new Components(logger, { leading: false });
    await components.add(part('webhooks'));
    await components.add(leaderPart('pipeline of a'));
    await components.add(leaderPart('pipeline of b'));
    await components.start();
    assert.deepEqual(events, ['start webhooks']);
    await components.lead();
    await components.add(leaderPart('pipeline of c'));
    assert.equal(components.leading, true);
    await components.follow();
    await components.stop();
    assert.deepEqual(events, [
      'start webhooks',
      'start pipeline of a',
      'start pipeline of b',
      'start pipeline of c',
      'stop pipeline of c',
      'stop pipeline of b',
      'stop pipeline of a',
      'stop webhooks',
    ]);
  });

  it('leave a leader-only part added while following stopped until it leads', async () => {
    const { logger, events, part, leaderPart } = recorder();
    const components = new Components(logger, { leading: false });
    await components.add(part('webhooks'));
    await components.start();
    await components.add(leaderPart('pipeline of a'));
    assert.deepEqual(events, ['start webhooks']);
    await Promise.all([components.lead(), components.follow(), components.lead()]);
    assert.deepEqual(events, [
      'start webhooks',
      'start pipeline of a',
      'stop pipeline of a',
      'start pipeline of a',
    ]);
    await components.stop();
    assert.deepEqual(events.slice(-2), ['stop pipeline of a', 'stop webhooks']);
  });
});
