import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nowhere, refuses } from '../../../../test/support/cli-options.ts';
import { freezeOptions } from './options.ts';

describe('freezeOptions: what causeway freeze holds', () => {
  it('lasts its lifetime, or until resumed; says why; waits 60 s by default', () => {
    assert.deepEqual(freezeOptions({ message: 'migrating', lifetime: '600' }, { podNamespace: 'ops' }), {
      namespace: 'ops',
      prefix: 'causeway.dev',
      lifetimeS: 600,
      message: 'migrating',
      waitS: 60,
    });
    assert.deepEqual(freezeOptions({ 'annotation-prefix': 'team-a.example.com', wait: '0' }, nowhere), {
      namespace: 'default',
      prefix: 'team-a.example.com',
      message: '',
      waitS: 0,
    });
    refuses(() => freezeOptions({ lifetime: '0' }, nowhere), '--lifetime expects at least 1');
  });
});
