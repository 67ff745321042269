import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BILLING, nowhere, refuses } from '../../../../test/support/cli-options.ts';
import { DEFAULT_IDENTITY } from '../../../identity.ts';
import { explainOptions } from './options.ts';

describe('explainOptions: what causeway explain reads', () => {
  it('reads <resource>/<name>, the handlers from where the gateway gets them, its identity and where it peers', () => {
    assert.deepEqual(
      explainOptions(
        'kex/my-object',
        {
          namespace: 'team-a',
          functions: [BILLING],
          'function-services': 'functions',
          module: './operator.ts',
          output: 'json',
          'state-in': 'annotations',
          'adopt-kopf-state': 'kopf.zalando.org',
          'status-key': 'mine',
          'signing-keys': 'causeway/signing-keys',
        },
        { contextNamespace: 'ops' },
      ),
      {
        request: {
          resource: 'kex',
          name: 'my-object',
          namespace: 'team-a',
          identity: { ...DEFAULT_IDENTITY, statusKey: 'mine' },
          stateIn: 'annotations',
          adoptKopf: 'kopf.zalando.org',
          peeringNamespace: 'ops',
        },
        sources: {
          functions: [{ name: 'billing', url: 'http://billing-functions:8080' }],
          functionServices: 'functions',
        },
        module: './operator.ts',
        output: 'json',
        signingKeys: { namespace: 'causeway', name: 'signing-keys' },
      },
    );
  });

  it('prints text by default, in no namespace unless given (the resource decides), peering in the default namespace', () => {
    const { request, output } = explainOptions('kopfexamples.kopf.dev/one', { module: 'op.ts' }, nowhere);
    assert.equal(output, 'text');
    assert.equal(request.namespace, undefined);
    assert.equal(request.resource, 'kopfexamples.kopf.dev');
    assert.equal(request.stateIn, 'auto');
    assert.equal(request.peeringNamespace, 'default');
  });

  it("takes the gateway's namespace, whose objects it serves to no service, and refuses what is no namespace", () => {
    const given = { module: 'op.ts', 'gateway-namespace': 'causeway-system' };
    assert.equal(explainOptions('kex/one', given, nowhere).request.ownNamespace, 'causeway-system');
    assert.equal(explainOptions('kex/one', { module: 'op.ts' }, nowhere).request.ownNamespace, undefined);
    refuses(
      () => explainOptions('kex/one', { module: 'op.ts', 'gateway-namespace': 'Causeway System' }, nowhere),
      '--gateway-namespace expects a namespace, got "Causeway System"',
    );
  });

  it('refuses an object not named <resource>/<name>, no handlers to explain with, and an unknown output', () => {
    const got = (object: string) => `expects <resource>/<name>, e.g. kopfexamples/my-object, got "${object}"`;
    for (const object of ['kex', '/one', 'kex/', 'kex/one/two'])
      refuses(() => explainOptions(object, { module: 'op.ts' }, nowhere), got(object));
    refuses(
      () => explainOptions('kex/one', {}, nowhere),
      'needs the handlers, from where the gateway gets them: --module <file>, --functions <name>=<url> or --function-services <ns>',
    );
    refuses(
      () => explainOptions('kex/one', { module: 'op.ts', output: 'yaml' }, nowhere),
      '--output expects text or json, got "yaml"',
    );
    refuses(
      () => explainOptions('kex/one', { functions: ['billing'] }, nowhere),
      '--functions expects <name>=<url>, the service\'s name and its URL (e.g. kopfexample=http://kopfexample-functions:8080), got "billing"',
    );
  });
});
