import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../logging.ts';
import { type Elector, type Holder, Manager, type Placement, part } from './manager.ts';
import { ALONE, type Role } from './role.ts';

function recorder() {
  const lines: string[] = [];
  const logger = createLogger({ sink: { write: (line) => lines.push(line) } });
  const events: string[] = [];
  const roles: Role[] = [];
  const made = (name: string, placement: Placement = 'every replica', failing = false) =>
    part(name, placement, {
      start: (role) => {
        events.push(`start ${name}`);
        roles.push(role);
      },
      stop: async () => {
        events.push(`stop ${name}`);
        if (failing) throw new Error('stuck');
      },
    });
  return { lines, logger, events, roles, made };
}

/** An elector driven by the test: it holds or releases when told, and is the role it gives. */
function testElector(leads: boolean) {
  let holder: Holder | undefined;
  const role: Role = { ...ALONE, leads, othersRunning: async () => true };
  const elector: Elector = {
    name: 'test elector',
    role,
    start: async (given) => {
      holder = given;
    },
    stop: async () => {},
  };
  const started = () => {
    if (!holder) throw new Error('the elector was not started');
    return holder;
  };
  return { elector, role, hold: () => started().hold(), release: () => started().release() };
}

describe('the manager', () => {
  it('starts the parts by stage, then in the order added, and stops them in the reverse', async () => {
    const { logger, events, made } = recorder();
    const manager = new Manager(logger);
    await manager.add('resources', made('pipeline'));
    await manager.add('namespaces', made('namespace watch'));
    await manager.add('resources', made('another pipeline'));
    await manager.add('observability', made('metrics'));
    await manager.start();
    await manager.stop();
    assert.deepEqual(events, [
      'start metrics',
      'start namespace watch',
      'start pipeline',
      'start another pipeline',
      'stop another pipeline',
      'stop pipeline',
      'stop namespace watch',
      'stop metrics',
    ]);
  });

  it('starts a part added after the start at once, and stops it before the earlier parts of its stage', async () => {
    const { logger, events, made } = recorder();
    const manager = new Manager(logger);
    await manager.add('resources', made('pipeline of a'));
    await manager.add('fleet', made('dev sessions'));
    await manager.start();
    await manager.add('resources', made('late resource'));
    await manager.stop();
    assert.deepEqual(events, [
      'start pipeline of a',
      'start dev sessions',
      'start late resource',
      'stop dev sessions',
      'stop late resource',
      'stop pipeline of a',
    ]);
  });

  it('stops every part even when one fails to stop, says which, and stops once when asked twice', async () => {
    const { lines, logger, events, made } = recorder();
    const manager = new Manager(logger);
    await manager.add('services', made('services'));
    await manager.add('resources', made('watch', 'every replica', true));
    await manager.start();
    await Promise.all([manager.stop(), manager.stop()]);
    assert.deepEqual(events.slice(-2), ['stop watch', 'stop services']);
    assert.match(lines.join(''), /stopping a part failed part=watch err=stuck/);
  });

  it('refuses a part once stopping', async () => {
    const { logger, made } = recorder();
    const manager = new Manager(logger);
    await manager.stop();
    await assert.rejects(manager.add('resources', made('late')), /the gateway is stopping/);
  });

  it('alone, runs every placement from the start and gives each part the role ALONE', async () => {
    const { logger, events, roles, made } = recorder();
    const manager = new Manager(logger);
    await manager.add('admission', made('webhooks'));
    await manager.add('resources', made('pipeline', 'shard'));
    await manager.add('fleet', made('announcer', 'leader'));
    await manager.start();
    assert.equal(manager.handling, true);
    assert.deepEqual(events, ['start webhooks', 'start pipeline', 'start announcer']);
    assert.ok(roles.every((role) => role === ALONE));
    await manager.stop();
  });

  it('with an elector, runs the shard and leader parts only while it holds them, with its role', async () => {
    const { logger, events, roles, made } = recorder();
    const manager = new Manager(logger);
    const { elector, role, hold, release } = testElector(true);
    await manager.add('admission', made('webhooks'));
    await manager.add('resources', made('pipeline of a', 'shard'));
    await manager.elect(elector);
    await manager.add('fleet', made('announcer', 'leader'));
    await manager.start();
    assert.equal(manager.handling, false);
    assert.deepEqual(events, ['start webhooks']);
    await hold();
    await manager.add('resources', made('pipeline of b', 'shard'));
    assert.equal(manager.handling, true);
    await release();
    await manager.stop();
    assert.deepEqual(events, [
      'start webhooks',
      'start pipeline of a',
      'start announcer',
      'start pipeline of b',
      'stop announcer',
      'stop pipeline of b',
      'stop pipeline of a',
      'stop webhooks',
    ]);
    assert.ok(roles.every((given) => given === role));
    assert.equal(manager.role, role);
  });

  it('runs no leader part on a member that handles a share but does not lead', async () => {
    const { logger, events, made } = recorder();
    const manager = new Manager(logger);
    const { elector, hold } = testElector(false);
    await manager.elect(elector);
    await manager.add('resources', made('pipeline', 'shard'));
    await manager.add('fleet', made('announcer', 'leader'));
    await manager.start();
    await hold();
    assert.deepEqual(events, ['start pipeline']);
    await manager.stop();
    assert.deepEqual(events, ['start pipeline', 'stop pipeline']);
  });

  it('leaves a shard part added while released stopped until it holds, and turns one change at a time', async () => {
    const { logger, events, made } = recorder();
    const manager = new Manager(logger);
    const { elector, hold, release } = testElector(true);
    await manager.elect(elector);
    await manager.add('admission', made('webhooks'));
    await manager.start();
    await manager.add('resources', made('pipeline of a', 'shard'));
    assert.deepEqual(events, ['start webhooks']);
    await Promise.all([hold(), release(), hold()]);
    assert.deepEqual(events, [
      'start webhooks',
      'start pipeline of a',
      'stop pipeline of a',
      'start pipeline of a',
    ]);
    await manager.stop();
    assert.deepEqual(events.slice(-2), ['stop pipeline of a', 'stop webhooks']);
  });

  it('takes one elector only', async () => {
    const { logger } = recorder();
    const manager = new Manager(logger);
    await manager.elect(testElector(true).elector);
    await assert.rejects(manager.elect(testElector(true).elector), /an elector is already set/);
  });
});
