import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { noFiles, reads } from '../../../../test/support/cli-options.ts';
import { conformanceOptions } from './options.ts';

describe('conformanceOptions', () => {
  it("checks the service by its name, trusting the CA given, signing with the gateway's keys when given their Secret", () => {
    assert.deepEqual(
      conformanceOptions(
        'https://billing:8443',
        { name: 'billing', 'functions-ca': '/ca.pem', 'signing-keys': 'operators/causeway-signing-keys' },
        reads.text,
      ),
      {
        url: 'https://billing:8443',
        name: 'billing',
        ca: 'THE CA',
        signingKeys: { namespace: 'operators', name: 'causeway-signing-keys' },
      },
    );
    assert.deepEqual(conformanceOptions('http://billing:8080', { name: 'billing' }, noFiles), {
      url: 'http://billing:8080',
      name: 'billing',
    });
  });
});
