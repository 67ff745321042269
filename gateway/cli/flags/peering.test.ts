import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { noFiles, nowhere, refuses } from '../../../test/support/cli-options.ts';
import { DEV_PRIORITY } from '../../peering/members.ts';
import { gatewayOptions } from '../gateway-options.ts';
import { peeringOptions } from './peering.ts';

describe('peeringOptions: how run, gateway and dev peer', () => {
  it("peers by default, in the namespace given, else the pod's, else the context's, else default", () => {
    assert.deepEqual(peeringOptions({}, nowhere), { namespace: 'default' });
    assert.deepEqual(peeringOptions({}, { contextNamespace: 'team-a' }), { namespace: 'team-a' });
    assert.deepEqual(peeringOptions({}, { podNamespace: 'operators', contextNamespace: 'team-a' }), {
      namespace: 'operators',
    });
    assert.deepEqual(peeringOptions({ 'peering-namespace': 'ops' }, { podNamespace: 'operators' }), {
      namespace: 'ops',
    });
    refuses(
      () => peeringOptions({ 'peering-namespace': 'Ops!' }, nowhere),
      '--peering-namespace expects a namespace, got "Ops!"',
    );
  });

  it('shares the objects with --sharding', () => {
    assert.deepEqual(peeringOptions({ sharding: true }, nowhere), { namespace: 'default', sharding: true });
  });

  it('takes a priority, negative too, or the dev priority, not both', () => {
    assert.deepEqual(peeringOptions({ priority: '-5' }, nowhere), { namespace: 'default', priority: -5 });
    assert.deepEqual(peeringOptions({ dev: true }, nowhere), {
      namespace: 'default',
      priority: DEV_PRIORITY,
    });
    refuses(
      () => peeringOptions({ dev: true, priority: '1' }, nowhere),
      '--dev and --priority exclude each other',
    );
    refuses(
      () => peeringOptions({ priority: '1.5' }, nowhere),
      '--priority expects a whole number, got "1.5"',
    );
  });

  it('does not peer with --standalone, which no other peering flag goes with', () => {
    assert.equal(peeringOptions({ standalone: true }, nowhere), undefined);
    assert.equal(gatewayOptions({ standalone: true }, noFiles, nowhere).peering, undefined);
    assert.deepEqual(gatewayOptions({}, noFiles, nowhere).peering, { namespace: 'default' });
    refuses(
      () => peeringOptions({ standalone: true, dev: true }, nowhere),
      '--standalone and --dev exclude each other',
    );
    refuses(
      () => peeringOptions({ standalone: true, sharding: true }, nowhere),
      '--standalone and --sharding exclude each other',
    );
    refuses(
      () => peeringOptions({ standalone: true, 'peering-namespace': 'ops' }, nowhere),
      '--standalone and --peering-namespace exclude each other',
    );
  });
});
