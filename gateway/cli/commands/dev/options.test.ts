import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { noFiles, nowhere, refuses } from '../../../../test/support/cli-options.ts';
import { DEV_PRIORITY } from '../../../peering/members.ts';
import { devGatewayOptions, devSessionOptions } from './options.ts';

describe('devGatewayOptions: what causeway dev gives its own gateway', () => {
  it("runs causeway dev's own gateway at the dev priority, unless told another or --standalone", () => {
    assert.deepEqual(devGatewayOptions({}, noFiles, nowhere).peering, {
      namespace: 'default',
      priority: DEV_PRIORITY,
    });
    assert.deepEqual(devGatewayOptions({ priority: '5' }, noFiles, nowhere).peering, {
      namespace: 'default',
      priority: 5,
    });
    assert.equal(devGatewayOptions({ standalone: true }, noFiles, nowhere).peering, undefined);
  });
});

describe('devSessionOptions: the session causeway dev holds with a deployed gateway', () => {
  it('is none without --dev-sessions', () => {
    assert.equal(devSessionOptions({ 'session-seconds': '30' }), undefined);
  });

  it('lasts 15 s unrenewed by default, at least 3, and verifies with public keys when given the Secret', () => {
    assert.deepEqual(devSessionOptions({ 'dev-sessions': 'operators' }), {
      namespace: 'operators',
      durationSeconds: 15,
      reach: 'auto',
    });
    assert.deepEqual(
      devSessionOptions({
        'dev-sessions': 'operators',
        'session-seconds': '3',
        'dev-reach': 'ngrok',
        'ngrok-domain': 'me.ngrok.app',
        'signing-keys': 'operators/causeway-signing-keys',
      }),
      {
        namespace: 'operators',
        durationSeconds: 3,
        reach: 'ngrok',
        ngrokDomain: 'me.ngrok.app',
        publicKeys: { namespace: 'operators', name: 'causeway-signing-keys' },
      },
    );
    refuses(
      () => devSessionOptions({ 'dev-sessions': 'operators', 'session-seconds': '2' }),
      '--session-seconds expects at least 3',
    );
  });

  it('is reached as --dev-reach says: auto, local or ngrok', () => {
    refuses(
      () => devSessionOptions({ 'dev-sessions': 'operators', 'dev-reach': 'service' }),
      '--dev-reach expects auto, local or ngrok, got "service"',
    );
  });
});
