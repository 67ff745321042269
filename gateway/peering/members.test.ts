import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '../../protocol/index.ts';
import {
  acknowledgedByAll,
  aliveByWallClock,
  Liveness,
  type Member,
  memberOf,
  notAcknowledging,
  ownerOf,
  viewOf,
} from './members.ts';
import { Ring } from './ring.ts';

const PREFIX = 'causeway.dev';

function lease(id: string, annotations: Record<string, unknown> = {}, spec: Record<string, unknown> = {}) {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name: `${PREFIX}.${id}`,
      resourceVersion: '1',
      annotations: { [`${PREFIX}/since`]: '2026-11-27T08:00:00.000Z', ...annotations },
    },
    spec: { holderIdentity: id, leaseDurationSeconds: 15, ...spec },
  } as unknown as KubernetesObject;
}

function member(id: string, fields: Partial<Member> = {}): Member {
  return {
    id,
    lease: `${PREFIX}.${id}`,
    resourceVersion: '1',
    priority: 0,
    since: '2026-11-27T08:00:00.000Z',
    durationSeconds: 15,
    acknowledged: '',
    leading: false,
    sharding: false,
    ...fields,
  };
}

describe('peering members', () => {
  it('read a member from its Lease: priority, when it joined, what it acknowledges', () => {
    const read = memberOf(
      lease('gw-a', {
        [`${PREFIX}/priority`]: '666',
        [`${PREFIX}/acknowledged`]: 'abc',
        [`${PREFIX}/leading`]: 'true',
      }),
      PREFIX,
    );
    assert.deepEqual(read, member('gw-a', { priority: 666, acknowledged: 'abc', leading: true }));
  });

  it('ignore Leases that are not members, or hostile: no holder, no duration, a priority out of range or not a number', () => {
    assert.equal(memberOf(lease('gw-a', {}, { holderIdentity: undefined }), PREFIX), undefined);
    assert.equal(memberOf(lease('gw-a', {}, { leaseDurationSeconds: 0 }), PREFIX), undefined);
    assert.equal(memberOf(lease('gw-a', {}, { leaseDurationSeconds: '15' }), PREFIX), undefined);
    assert.equal(memberOf(lease('gw-a', { [`${PREFIX}/priority`]: '1e9' }), PREFIX), undefined);
    assert.equal(memberOf(lease('gw-a', { [`${PREFIX}/priority`]: 'high' }), PREFIX), undefined);
    assert.equal(memberOf(lease('gw-a', { [`${PREFIX}/priority`]: { valueOf: 1 } }), PREFIX), undefined);
    assert.equal(memberOf(lease('gw-a', { [`${PREFIX}/since`]: 'yesterday' }), PREFIX), undefined);
  });

  it('read a freeze: its message and its end, from when it was written', () => {
    const read = memberOf(
      lease(
        'freeze',
        { [`${PREFIX}/freeze`]: 'upgrading the CRD' },
        { renewTime: '2026-11-27T08:00:00.000000Z', leaseDurationSeconds: 60 },
      ),
      PREFIX,
    );
    assert.deepEqual(read?.freeze, {
      message: 'upgrading the CRD',
      until: Date.parse('2026-11-27T08:01:00Z'),
    });
  });

  it('take a member for gone once its Lease has not changed for its duration, by this clock', () => {
    const liveness = new Liveness();
    const a = member('a');
    assert.deepEqual(liveness.alive([a], 0), [a]);
    assert.deepEqual(liveness.alive([a], 14_999), [a]);
    assert.deepEqual(liveness.alive([a], 15_000), []);
    const renewed = { ...a, resourceVersion: '2' };
    assert.deepEqual(liveness.alive([renewed], 16_000), [renewed]);
    assert.deepEqual(liveness.alive([renewed], 30_999), [renewed]);
    assert.deepEqual(liveness.alive([renewed], 31_000), []);
  });

  it('end a freeze at its wall-clock end, renewed or not', () => {
    const liveness = new Liveness();
    const freeze = member('freeze', { freeze: { message: '', until: 60_000 } });
    assert.deepEqual(liveness.alive([freeze], 59_999), [freeze]);
    assert.deepEqual(liveness.alive([freeze], 60_000), []);
    const forever = member('freeze', { freeze: { message: '', until: undefined } });
    assert.deepEqual(liveness.alive([forever], 1e12), [forever]);
  });

  it('choose the oldest member of the highest priority to lead, the same on every gateway', () => {
    const old = member('b', { since: '2026-11-27T07:00:00.000Z' });
    const young = member('a', { since: '2026-11-27T08:00:00.000Z' });
    assert.equal(viewOf([young, old]).leader?.id, 'b');
    assert.equal(viewOf([old, young]).digest, viewOf([young, old]).digest);
    const dev = member('laptop', { priority: 666, since: '2026-11-27T09:00:00.000Z' });
    const view = viewOf([young, old, dev]);
    assert.equal(view.leader?.id, 'laptop');
    assert.notEqual(view.digest, viewOf([young, old]).digest);
  });

  it('keep the leader that leads now, even when an older member comes back', () => {
    const old = member('old', { since: '2026-11-27T07:00:00.000Z' });
    const leading = member('leading', { since: '2026-11-27T08:00:00.000Z', leading: true });
    assert.equal(viewOf([old, leading]).leader?.id, 'leading');
    const dev = member('laptop', { priority: 666, since: '2026-11-27T09:00:00.000Z' });
    assert.equal(viewOf([old, leading, dev]).leader?.id, 'laptop', 'a higher priority still takes over');
  });

  it('let nobody lead while a freeze is held', () => {
    const view = viewOf([member('a'), member('freeze', { freeze: { message: 'hold', until: undefined } })]);
    assert.equal(view.leader, undefined);
    assert.equal(view.frozen?.id, 'freeze');
  });

  it('wait for every live member to acknowledge a view, but not for a freeze', () => {
    const members = [
      member('a'),
      member('b'),
      member('freeze', { freeze: { message: '', until: undefined } }),
    ];
    const { digest } = viewOf(members);
    const view = viewOf(members.map((each) => (each.id === 'a' ? { ...each, acknowledged: digest } : each)));
    assert.equal(acknowledgedByAll(view), false);
    assert.deepEqual(
      notAcknowledging(view).map((each) => each.id),
      ['b'],
    );
    const all = viewOf(members.map((each) => ({ ...each, acknowledged: digest })));
    assert.equal(acknowledgedByAll(all), true);
  });

  it('make every member of the highest priority active, and none while frozen or while they disagree on sharding', () => {
    const a = member('a', { sharding: true });
    const b = member('b', { sharding: true });
    const paused = member('c', { sharding: true, priority: -1 });
    assert.deepEqual(
      viewOf([a, b, paused]).active.map((each) => each.id),
      ['a', 'b'],
    );
    assert.notEqual(viewOf([a, b]).digest, viewOf([member('a'), member('b')]).digest);
    assert.deepEqual(
      viewOf([a, b, member('freeze', { freeze: { message: '', until: undefined } })]).active,
      [],
    );
    assert.equal(viewOf([a, member('b')]).mixed, true);
    assert.equal(viewOf([a, b]).mixed, false);
  });

  it('judge a member alive by the wall clock, for a tool that does not watch: renewed within its duration, a freeze within its lifetime', () => {
    const now = Date.parse('2026-11-27T08:00:00.000Z');
    assert.equal(aliveByWallClock(member('gw-a', { renewedAt: now - 10_000 }), now), true);
    assert.equal(aliveByWallClock(member('gw-a', { renewedAt: now - 60_000 }), now), false);
    assert.equal(aliveByWallClock(member('gw-a'), now), false, 'never renewed');
    const freeze = { message: '', until: now - 1 };
    assert.equal(aliveByWallClock(member('freeze', { freeze }), now), false);
    assert.equal(
      aliveByWallClock(member('freeze', { freeze: { message: '', until: undefined } }), now),
      true,
    );
  });

  it('own an object by the leader, or with sharding by its member on the ring; nobody while frozen', () => {
    const leading = viewOf([member('gw-a', { leading: true }), member('gw-b')]);
    assert.equal(ownerOf(leading, 'some-uid')?.id, 'gw-a');
    const sharded = viewOf([member('gw-a', { sharding: true }), member('gw-b', { sharding: true })]);
    for (const uid of ['uid-1', 'uid-2', 'uid-3', 'uid-4']) {
      assert.equal(ownerOf(sharded, uid)?.id, new Ring(['gw-a', 'gw-b']).ownerOf(uid));
    }
    const frozen = viewOf([member('gw-a'), member('freeze', { freeze: { message: '', until: undefined } })]);
    assert.equal(ownerOf(frozen, 'some-uid'), undefined);
  });
});
