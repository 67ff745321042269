import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BILLING, nowhere, reads, refuses, SECRET } from '../../../../test/support/cli-options.ts';
import { type GatewayOnlyValues, gatewayOnlyOptions } from './options.ts';

const gatewayOnly = (values: GatewayOnlyValues) => gatewayOnlyOptions(values, reads, nowhere);

describe('gatewayOnlyOptions: what causeway gateway starts', () => {
  it('needs a service: --functions or --function-services', () => {
    refuses(
      () => gatewayOnly({}),
      'needs at least one --functions <name>=<url>, or --function-services <namespace>',
    );
    assert.equal(gatewayOnly({ 'function-services': 'operators' }).functionServices, 'operators');
  });

  it('pins each --functions service by name at its URL', () => {
    assert.deepEqual(gatewayOnly({ functions: [BILLING] }).functions, [
      { name: 'billing', url: 'http://billing-functions:8080' },
    ]);
    refuses(
      () => gatewayOnly({ functions: ['billing'] }),
      '--functions expects <name>=<url>, the service\'s name and its URL (e.g. kopfexample=http://kopfexample-functions:8080), got "billing"',
    );
  });

  it("gives each service what its per-service flags say: secret, scope, certificate's Secret, dev sessions", () => {
    const options = gatewayOnly({
      functions: [BILLING, 'payroll=http://payroll-functions:8080'],
      'function-secret': ['billing=/secrets/billing'],
      'function-scope': ['billing=/scopes/billing.yaml'],
      'function-tls': ['billing=operators/billing-tls'],
      'function-certificates': 'operators/function-ca',
      'function-dev-sessions': ['billing=https://*.ngrok.app,http://127.0.0.1:*'],
      'dev-session-max-seconds': '600',
    });
    assert.deepEqual(options.functions, [
      {
        name: 'billing',
        url: 'http://billing-functions:8080',
        secret: new TextEncoder().encode(SECRET),
        certificate: { namespace: 'operators', name: 'billing-tls' },
        scope: { resources: ['invoices.billing.example.com'] },
        devSessions: { urls: ['https://*.ngrok.app', 'http://127.0.0.1:*'], maxSeconds: 600 },
      },
      { name: 'payroll', url: 'http://payroll-functions:8080' },
    ]);
    assert.deepEqual(options.settings?.calls?.certificateAuthority, {
      namespace: 'operators',
      name: 'function-ca',
    });
  });

  it('refuses a per-service flag naming a service that no --functions gives', () => {
    for (const [flag, value] of [
      ['function-secret', 'payroll=/secrets/billing'],
      ['function-scope', 'payroll=/scopes/billing.yaml'],
      ['function-tls', 'payroll=operators/payroll-tls'],
      ['function-dev-sessions', 'payroll=https://*.ngrok.app'],
    ] as const) {
      refuses(
        () => gatewayOnly({ functions: [BILLING], 'function-certificates': 'operators/ca', [flag]: [value] }),
        `--${flag} names "payroll", which no --functions gives`,
      );
    }
    refuses(
      () => gatewayOnly({ functions: [BILLING], 'login-from': 'payroll' }),
      '--login-from names "payroll", which no --functions gives',
    );
  });

  it('refuses a malformed <name>=<value>, saying what the flag expects', () => {
    const globs = '<name>=<url-glob>[,<url-glob>...], e.g. billing=https://*.ngrok.app';
    for (const [flag, value, expects] of [
      ['function-secret', 'billing', '<name>=<file>'],
      ['function-scope', '=/scopes/billing.yaml', '<name>=<file>'],
      ['function-tls', 'Billing=operators/billing-tls', '<name>=<namespace>/<secret>'],
      ['function-dev-sessions', 'billing=https://mallory@*.ngrok.app', globs],
      ['function-dev-sessions', 'billing=file:///tmp/*', globs],
    ] as const) {
      refuses(
        () => gatewayOnly({ functions: [BILLING], 'function-certificates': 'operators/ca', [flag]: [value] }),
        `--${flag} expects ${expects}, got "${value}"`,
      );
    }
  });

  it("says what is wrong with a service's scope file", () => {
    refuses(
      () => gatewayOnly({ functions: [BILLING], 'function-scope': ['billing=/scopes/broken.yaml'] }),
      '--function-scope billing: the scope of "billing" in /scopes/broken.yaml has "weather": a scope has resources, admission, children, namespaces, serviceAccount, secrets and impersonate',
    );
  });

  it('needs the Secret of the CA for --function-tls', () => {
    refuses(
      () => gatewayOnly({ functions: [BILLING], 'function-tls': ['billing=operators/billing-tls'] }),
      '--function-tls needs --function-certificates <ns/name>, the Secret of the CA that issues them',
    );
  });

  it('lets dev sessions last at least a second unrenewed', () => {
    refuses(
      () => gatewayOnly({ functions: [BILLING], 'dev-session-max-seconds': '0' }),
      '--dev-session-max-seconds expects at least 1',
    );
  });

  it('signs with --signing-keys, rotated after --key-rotation-days (not 0) and published --key-propagation-seconds first', () => {
    assert.deepEqual(
      gatewayOnly({
        functions: [BILLING],
        'signing-keys': 'operators/causeway-signing-keys',
        'key-rotation-days': '2',
        'key-propagation-seconds': '60',
      }).settings?.signing,
      {
        keys: { namespace: 'operators', name: 'causeway-signing-keys' },
        rotateAfterMs: 2 * 24 * 3600_000,
        propagationMs: 60_000,
      },
    );
    refuses(
      () => gatewayOnly({ functions: [BILLING], 'key-rotation-days': '0' }),
      '--key-rotation-days expects at least 1',
    );
  });

  it('refuses budgets that could not hold the work: a reply budget below the longest reply, no daemon', () => {
    refuses(
      () => gatewayOnly({ functions: [BILLING], 'function-reply-mib': '8' }),
      '--function-reply-mib expects at least 16, got 8',
    );
    refuses(
      () => gatewayOnly({ functions: [BILLING], 'function-daemons': '0' }),
      '--function-daemons expects at least 1, got 0',
    );
    refuses(
      () => gatewayOnly({ functions: [BILLING], 'function-index-mib': 'lots' }),
      '--function-index-mib expects a whole number, got "lots"',
    );
  });

  it("adds the calls' settings of the gateway to those every gateway takes", () => {
    assert.deepEqual(
      gatewayOnly({
        functions: [BILLING],
        'function-timeout': '10',
        'functions-ca': '/ca.pem',
        'function-concurrency': '4',
        'function-reply-mib': '32',
        'function-daemons': '10',
        'function-index-mib': '8',
        'allow-plain-http': true,
        unscoped: true,
        'allow-loopback-functions': true,
      }).settings?.calls,
      {
        timeoutMs: 10_000,
        ca: 'THE CA',
        concurrencyPerService: 4,
        replyBytesPerService: 32 * 1024 * 1024,
        daemonsPerService: 10,
        indexBytesPerService: 8 * 1024 * 1024,
        plainHttp: true,
        unscoped: true,
        allowLoopback: true,
      },
    );
  });
});
