import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parse as parseYaml } from 'yaml';
import { oddString } from '../../test/support/arbitraries.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import { DEV_PRIORITY } from '../peering/members.ts';
import { COMMON, type Flag, parseCommandLine, UsageError } from './command-line.ts';
import { COMMANDS } from './main.ts';
import {
  buildOptions,
  conformanceOptions,
  devGatewayOptions,
  devSessionOptions,
  explainOptions,
  freezeOptions,
  type GatewayOnlyValues,
  gatewayOnlyOptions,
  gatewayOptions,
  identityOf,
  logFormat,
  logLevel,
  namespacesWarning,
  peeringOptions,
  rbacCheckOptions,
  rbacCommandOptions,
  rbacOptions,
  releaseOptions,
  serveOptions,
  type Whereabouts,
} from './options.ts';

/** Files by path, as a test gives them: reading another is an error, as it would be. */
function files(contents: Record<string, string>) {
  return (path: string): string => {
    const text = contents[path];
    if (text === undefined) throw new Error(`ENOENT: ${path}`);
    return text;
  };
}

const noFiles = files({});
const SECRET = 'a-secret-shared-with-billing-alone-0123456789';
const reads = {
  text: files({
    '/scopes/billing.yaml': 'resources: [invoices.billing.example.com]\n',
    '/scopes/broken.yaml': 'resources: [invoices]\nweather: sunny\n',
    '/ca.pem': 'THE CA',
  }),
  secret: (file: string) => {
    if (file !== '/secrets/billing') throw new Error(`ENOENT: ${file}`);
    return new TextEncoder().encode(SECRET);
  },
};
const BILLING = 'billing=http://billing-functions:8080';
/** Out of a pod, with a kubeconfig whose context names no namespace. */
const nowhere: Whereabouts = {};

function refuses(run: () => unknown, message: string): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof UsageError, `a UsageError, not ${error}`);
    assert.equal(error.message, message);
    return true;
  });
}

const gatewayOnly = (values: GatewayOnlyValues) => gatewayOnlyOptions(values, reads, nowhere);

describe('gatewayOptions: what run, gateway and dev give their gateway', () => {
  it('serves the namespaces given, or every one, and refuses both at once', () => {
    assert.deepEqual(gatewayOptions({ namespace: ['team-*', '!team-x'] }, noFiles, nowhere).namespaces, [
      'team-*',
      '!team-x',
    ]);
    assert.equal(gatewayOptions({ 'all-namespaces': true }, noFiles, nowhere).namespaces, undefined);
    refuses(
      () => gatewayOptions({ namespace: ['a'], 'all-namespaces': true }, noFiles, nowhere),
      '--namespace and --all-namespaces exclude each other',
    );
  });

  it('warns of serving every namespace only when neither --namespace nor --all-namespaces says so', () => {
    assert.equal(
      namespacesWarning({}),
      'neither --namespace nor --all-namespaces given: serving all namespaces',
    );
    assert.equal(namespacesWarning({ namespace: ['a'] }), undefined);
    assert.equal(namespacesWarning({ 'all-namespaces': true }), undefined);
  });

  it('keeps state where --state-in says: auto or annotations', () => {
    assert.deepEqual(gatewayOptions({}, noFiles, nowhere).settings?.persistence, { stateIn: 'auto' });
    assert.deepEqual(gatewayOptions({ 'state-in': 'annotations' }, noFiles, nowhere).settings?.persistence, {
      stateIn: 'annotations',
    });
    refuses(
      () => gatewayOptions({ 'state-in': 'status' }, noFiles, nowhere),
      '--state-in expects auto or annotations, got "status"',
    );
  });

  it("adopts a Kopf operator's state under an annotation prefix, and refuses what cannot be one", () => {
    assert.deepEqual(
      gatewayOptions({ 'adopt-kopf-state': 'kopf.zalando.org' }, noFiles, nowhere).settings?.persistence,
      {
        stateIn: 'auto',
        adoptKopf: 'kopf.zalando.org',
      },
    );
    refuses(
      () => gatewayOptions({ 'adopt-kopf-state': 'kopf.zalando.org/' }, noFiles, nowhere),
      `--adopt-kopf-state expects the annotation prefix of the Kopf operator's state (Kopf's default: kopf.zalando.org), got "kopf.zalando.org/"`,
    );
  });

  it('reads whole numbers, and refuses others naming the flag', () => {
    const settings = gatewayOptions({ concurrency: '8', 'function-timeout': '5' }, noFiles, nowhere).settings;
    assert.deepEqual(settings?.processing, { concurrency: 8 });
    assert.deepEqual(settings?.calls, { timeoutMs: 5000 });
    // '0x10', '1e3' and ' 8': found by the generated command lines, taken as 16, 1000 and 8.
    for (const value of ['x', '-1', '1.5', '0x10', '1e3', ' 8', '99999999999999999999']) {
      refuses(
        () => gatewayOptions({ concurrency: value }, noFiles, nowhere),
        `--concurrency expects a whole number, got "${value}"`,
      );
    }
  });

  it('serves liveness at a plain-HTTP URL only', () => {
    const url = 'http://0.0.0.0:8080/healthz';
    assert.equal(gatewayOptions({ liveness: url }, noFiles, nowhere).liveness, url);
    refuses(
      () => gatewayOptions({ liveness: 'https://0.0.0.0:8080/healthz' }, noFiles, nowhere),
      '--liveness: the liveness endpoint is served over plain HTTP (http://...), got "https://0.0.0.0:8080/healthz"',
    );
  });

  it("takes the identity's parts given, the default for the others", () => {
    assert.deepEqual(
      gatewayOptions({ finalizer: 'team-a.example.com/finalizer' }, noFiles, nowhere).identity,
      {
        ...DEFAULT_IDENTITY,
        finalizer: 'team-a.example.com/finalizer',
      },
    );
  });

  describe('admission webhooks', () => {
    const admission = (values: Parameters<typeof gatewayOptions>[0], readText = noFiles) =>
      gatewayOptions(values, readText, nowhere).settings?.admission;

    it('listens at --webhook-listen host:port, an IPv6 host in brackets', () => {
      assert.deepEqual(admission({ 'webhook-listen': '[::1]:8443' })?.listen, { host: '::1', port: 8443 });
      refuses(
        () => admission({ 'webhook-listen': '8443' }),
        '--webhook-listen expects host:port, got "8443"',
      );
    });

    it('is reached through --webhook-service namespace/name:port, listening on every address at its port unless --webhook-listen says where', () => {
      assert.deepEqual(admission({ 'webhook-service': 'operators/my-operator:8443' }), {
        reach: 'service',
        service: { namespace: 'operators', name: 'my-operator', port: 8443 },
        listen: { host: '0.0.0.0', port: 8443 },
      });
      assert.deepEqual(
        admission({ 'webhook-service': 'operators/my-operator:443', 'webhook-listen': '0.0.0.0:9443' })
          ?.listen,
        { host: '0.0.0.0', port: 9443 },
        "the Service's targetPort",
      );
      refuses(
        () => admission({ 'webhook-service': 'nonsense' }),
        '--webhook-service expects namespace/name:port, got "nonsense"',
      );
    });

    it('is reached as --webhook-reach says, one of its modes', () => {
      assert.equal(admission({ 'webhook-reach': 'ngrok' })?.reach, 'ngrok');
      refuses(
        () => admission({ 'webhook-reach': 'carrier-pigeon' }),
        '--webhook-reach expects auto, local, service or ngrok, got "carrier-pigeon"',
      );
    });

    it('serves the certificate files given in pairs, --webhook-cert-file with --webhook-key-file', () => {
      assert.deepEqual(
        admission({
          'webhook-cert-file': 'tls.crt',
          'webhook-key-file': 'tls.key',
          'webhook-ca-file': 'ca.crt',
        })?.certificateFiles,
        { cert: resolve('tls.crt'), key: resolve('tls.key'), ca: resolve('ca.crt') },
      );
      for (const alone of [{ 'webhook-cert-file': 'tls.crt' }, { 'webhook-key-file': 'tls.key' }]) {
        refuses(() => admission(alone), '--webhook-cert-file and --webhook-key-file go together');
      }
      // Found by the generated command lines: it said the two go together, naming neither given.
      refuses(
        () => admission({ 'webhook-ca-file': 'ca.crt' }),
        '--webhook-ca-file needs --webhook-cert-file and --webhook-key-file',
      );
    });

    it('keeps certificates and the ngrok authtoken in Secrets named namespace/name', () => {
      assert.deepEqual(
        admission({
          'webhook-certificates': 'operators/webhook-certificates',
          'ngrok-authtoken-secret': 'operators/ngrok',
          'ngrok-domain': 'my-operator.ngrok.app',
        }),
        {
          certificates: { namespace: 'operators', name: 'webhook-certificates' },
          ngrok: {
            authtokenSecret: { namespace: 'operators', name: 'ngrok' },
            domain: 'my-operator.ngrok.app',
          },
        },
      );
      refuses(
        () => admission({ 'webhook-certificates': 'webhook-certificates' }),
        '--webhook-certificates expects namespace/name, got "webhook-certificates"',
      );
    });

    it("reads the CA of the clients it answers from --webhook-client-ca's file", () => {
      assert.equal(admission({ 'webhook-client-ca': '/ca.pem' }, reads.text)?.clientCa, 'THE CA');
    });
  });
});

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
      '--function-scope billing: the scope of "billing" in /scopes/broken.yaml has "weather": a scope has resources, admission, children and namespaces',
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

  it("adds the calls' settings of the gateway to those every gateway takes", () => {
    assert.deepEqual(
      gatewayOnly({
        functions: [BILLING],
        'function-timeout': '10',
        'functions-ca': '/ca.pem',
        'function-concurrency': '4',
        'allow-plain-http': true,
        unscoped: true,
        'allow-loopback-functions': true,
      }).settings?.calls,
      {
        timeoutMs: 10_000,
        ca: 'THE CA',
        concurrencyPerService: 4,
        plainHttp: true,
        unscoped: true,
        allowLoopback: true,
      },
    );
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

describe('serveOptions', () => {
  it('listens on 0.0.0.0:8080 unless told, over HTTPS with a certificate and its key', () => {
    assert.deepEqual(serveOptions({}), { port: 8080, host: '0.0.0.0' });
    assert.deepEqual(
      serveOptions({ port: '0', host: '127.0.0.1', 'tls-cert': 'tls.crt', 'tls-key': 'tls.key' }),
      {
        port: 0,
        host: '127.0.0.1',
        tls: { certFile: 'tls.crt', keyFile: 'tls.key' },
      },
    );
    refuses(() => serveOptions({ 'tls-cert': 'tls.crt' }), '--tls-cert and --tls-key go together');
    refuses(() => serveOptions({ port: 'http' }), '--port expects a whole number, got "http"');
  });
});

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

describe('releaseOptions', () => {
  it('removes the finalizer of the identity given, from the object in the namespace given', () => {
    assert.deepEqual(
      releaseOptions(
        { resource: 'kex', name: 'stuck' },
        { namespace: 'team-a', finalizer: 'kopf.zalando.org/KopfFinalizerMarker' },
      ),
      {
        resource: 'kex',
        name: 'stuck',
        namespace: 'team-a',
        finalizer: 'kopf.zalando.org/KopfFinalizerMarker',
        fieldManager: DEFAULT_IDENTITY.fieldManager,
      },
    );
  });
});

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

describe('identityOf and logLevel', () => {
  it('default to the gateway identity and info', () => {
    assert.deepEqual(identityOf({}), DEFAULT_IDENTITY);
    assert.equal(logLevel({}), 'info');
    assert.equal(logLevel({ verbose: true }), 'debug');
    assert.equal(logLevel({ quiet: true }), 'warning');
  });

  it('take the level --log-level names, and refuse another or a second way to say it', () => {
    assert.equal(logLevel({ 'log-level': 'error' }), 'error');
    assert.throws(
      () => logLevel({ 'log-level': 'trace' }),
      /--log-level expects one of debug, info, warning, error, got "trace"/,
    );
    assert.throws(() => logLevel({ 'log-level': 'info', verbose: true }), /drop --verbose and --quiet/);
  });
});

describe('logFormat', () => {
  it('is text on a terminal and JSON elsewhere, unless --log-format says which', () => {
    assert.equal(logFormat({}, true, undefined), 'text');
    assert.equal(logFormat({}, false, undefined), 'json');
    assert.equal(logFormat({ 'log-format': 'auto' }, true, undefined), 'text');
    assert.equal(logFormat({ 'log-format': 'json' }, true, undefined), 'json');
    assert.equal(logFormat({ 'log-format': 'text' }, false, undefined), 'text');
  });

  it('takes CAUSEWAY_LOG_FORMAT where --log-format says nothing', () => {
    assert.equal(logFormat({}, false, 'text'), 'text');
    assert.equal(logFormat({ 'log-format': 'json' }, false, 'text'), 'json');
    assert.throws(
      () => logFormat({}, true, 'xml'),
      /CAUSEWAY_LOG_FORMAT expects text, json or auto, got "xml"/,
    );
    assert.throws(
      () => logFormat({ 'log-format': 'yaml' }, true, undefined),
      /--log-format expects text, json or auto, got "yaml"/,
    );
  });
});

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

describe('rbacOptions: what causeway rbac reads, and the gateway flags its rules follow', () => {
  it("reads the handlers' sources with their pinned scopes, the account, namespaces, peering, keys, certificates and admission", () => {
    assert.deepEqual(
      rbacOptions(
        {
          functions: [BILLING],
          'function-scope': ['billing=/scopes/billing.yaml'],
          'function-tls': ['billing=payments/billing-tls'],
          'function-certificates': 'ops/function-ca',
          namespace: ['payments'],
          'signing-keys': 'ops/signing-keys',
          'webhook-certificates': 'ops/webhooks-tls',
          'annotation-prefix': 'billing.example.com',
        },
        reads.text,
        { contextNamespace: 'ops' },
      ),
      {
        sources: {
          functions: [
            {
              name: 'billing',
              url: 'http://billing-functions:8080',
              scope: { resources: ['invoices.billing.example.com'] },
            },
          ],
        },
        signingKeys: { namespace: 'ops', name: 'signing-keys' },
        request: {
          account: { namespace: 'ops', name: 'causeway-gateway' },
          namespaces: ['payments'],
          stateIn: 'auto',
          peeringNamespace: 'ops',
          signingKeys: { namespace: 'ops', name: 'signing-keys' },
          functionCertificates: { namespace: 'ops', name: 'function-ca' },
          functionTls: [{ namespace: 'payments', name: 'billing-tls' }],
        },
        admission: {
          configurationName: 'billing.example.com',
          certificates: { namespace: 'ops', name: 'webhooks-tls' },
        },
      },
    );
  });

  it('takes --module and --function-services, --standalone (no Leases) and the account given', () => {
    const flags = rbacOptions(
      {
        module: './operator.ts',
        'function-services': 'functions',
        standalone: true,
        'service-account': 'operators/billing-gateway',
        'state-in': 'annotations',
      },
      noFiles,
      {},
    );
    assert.deepEqual(flags.sources, { functions: [], functionServices: 'functions' });
    assert.equal(flags.module, './operator.ts');
    assert.deepEqual(flags.request, {
      account: { namespace: 'operators', name: 'billing-gateway' },
      stateIn: 'annotations',
      functionTls: [],
      functionServices: 'functions',
    });
  });

  it('refuses flags that say no valid gateway', () => {
    assert.throws(() => rbacOptions({}, noFiles, {}), /needs the handlers/);
    assert.throws(
      () => rbacOptions({ module: 'm.ts', namespace: ['a'], 'all-namespaces': true }, noFiles, {}),
      /--namespace and --all-namespaces exclude each other/,
    );
    assert.throws(
      () => rbacOptions({ module: 'm.ts', standalone: true, 'peering-namespace': 'ops' }, noFiles, {}),
      /--standalone and --peering-namespace exclude each other/,
    );
    assert.throws(
      () => rbacOptions({ functions: [BILLING], 'function-tls': ['billing=ops/tls'] }, noFiles, {}),
      /--function-tls needs --function-certificates/,
    );
  });
});

describe("rbacCommandOptions: causeway rbac's module and the gateway's arguments as they are", () => {
  /** The values of `causeway rbac` with `args`, as its command line gives them. */
  const rbacValues = (args: string[]) => {
    const line = parseCommandLine(['rbac', ...args], COMMANDS);
    assert.ok(line.command);
    return line;
  };
  const optionsOf = (args: string[], whereabouts: Whereabouts, readText = noFiles) => {
    const { args: given, values } = rbacValues(args);
    return rbacCommandOptions(given.module, values, readText, whereabouts);
  };

  it('reads the module given as its argument, as --module does, and refuses it given both ways', () => {
    assert.equal(optionsOf(['./operator.ts', '-n', 'a'], nowhere).module, './operator.ts');
    assert.equal(optionsOf(['--module', './operator.ts'], nowhere).module, './operator.ts');
    refuses(
      () => optionsOf(['./operator.ts', '--module', './other.ts'], nowhere),
      'the module is given twice: as <module> and with --module; give it once',
    );
    refuses(
      () => optionsOf(['-n', 'a'], nowhere),
      `needs the handlers, from where the gateway gets them: <module>, --functions <name>=<url> or --function-services <ns>`,
    );
  });

  it('refuses a gateway that logs in through a service: it has no ServiceAccount whose RBAC to print', () => {
    refuses(
      () => optionsOf(['./operator.ts', '--login-from', 'billing'], nowhere),
      `--login-from billing: that gateway calls the API with the credentials "billing"'s login handler gives, not as a ServiceAccount, so what they grant is that handler's business: there is no RBAC of a ServiceAccount to print or check`,
    );
  });

  it('takes the secret shared with one service alone, to read its manifest', () => {
    const flags = optionsOf(
      [...['--functions', BILLING], ...['--function-secret', 'billing=/secrets/billing']],
      nowhere,
    );
    assert.deepEqual(flags.functionSecrets, new Map([['billing', '/secrets/billing']]));
    refuses(
      () => optionsOf(['--functions', BILLING, '--function-secret', 'shipping=/secrets/shipping'], nowhere),
      '--function-secret names "shipping", which no --functions gives',
    );
  });

  // The Deployments' args, as kubectl would run them in `operators`, and the scopes they mount.
  const deployFile = (path: string) => readFileSync(new URL(`../../deploy/${path}`, import.meta.url), 'utf8');
  const deployed = (path: string) => {
    const args: string[] = parseYaml(deployFile(path)).spec.template.spec.containers[0].args;
    assert.equal(args[0], 'gateway');
    return args.slice(1).map((arg) => arg.replaceAll('$(POD_NAMESPACE)', 'operators'));
  };
  const mounted = files({
    '/etc/causeway/scopes/kopfexample.yaml': deployFile('base/gateway/scopes/kopfexample.yaml'),
    '/etc/causeway/scopes/admission.yaml': deployFile('examples/17-admission/scopes/admission.yaml'),
  });
  /** Where `causeway rbac` runs: a kubeconfig whose context is in the gateway's namespace. */
  const inOperators = { contextNamespace: 'operators' };
  const handPicked = {
    minimal: [
      ...['--functions', 'kopfexample=https://kopfexample-functions.operators.svc:8080'],
      ...['--function-scope', 'kopfexample=/etc/causeway/scopes/kopfexample.yaml'],
      ...['--function-tls', 'kopfexample=operators/kopfexample-functions-tls'],
      ...['--function-certificates', 'operators/causeway-function-ca', '--namespace', 'operators'],
      ...['--signing-keys', 'operators/causeway-signing-keys'],
    ],
    admission: [
      ...['--functions', 'admission=https://kopfexample-functions.operators.svc:8080'],
      ...['--function-scope', 'admission=/etc/causeway/scopes/admission.yaml'],
      ...['--function-tls', 'admission=operators/kopfexample-functions-tls'],
      ...['--function-certificates', 'operators/causeway-function-ca', '--namespace', 'operators'],
      ...['--signing-keys', 'operators/causeway-signing-keys'],
      ...['--webhook-certificates', 'operators/causeway-gateway-webhooks-tls'],
    ],
  };
  const examples = [
    { name: 'deploy/examples/01-minimal', file: 'base/gateway/deployment.yaml', flags: handPicked.minimal },
    {
      name: 'deploy/examples/17-admission',
      file: 'examples/17-admission/gateway.yaml',
      flags: handPicked.admission,
    },
  ];
  for (const { name, file, flags } of examples) {
    it(`takes the args of ${name}'s gateway as they are, and reads what the flags that matter say alone`, () => {
      const args = deployed(file);
      assert.deepEqual(optionsOf(args, inOperators, mounted), optionsOf(flags, inOperators, mounted));
    });
  }
});

describe('rbacCheckOptions: how gateway and run check their rights at start', () => {
  const gatewayFlags = {
    functions: [BILLING],
    'function-scope': ['billing=/scopes/billing.yaml'],
    namespace: ['payments'],
    'signing-keys': 'ops/signing-keys',
  };

  it('refuses by default, against the request and admission causeway rbac makes of the same flags', () => {
    const { request, admission } = rbacOptions(gatewayFlags, reads.text, { contextNamespace: 'ops' });
    assert.deepEqual(rbacCheckOptions(gatewayFlags, reads.text, { contextNamespace: 'ops' }), {
      mode: 'refuse',
      flags: { request, admission },
    });
  });

  it('checks the Leases of --dev-sessions too', () => {
    const check = rbacCheckOptions({ ...gatewayFlags, 'dev-sessions': 'dev' }, reads.text, nowhere);
    assert.equal(check?.flags.request.devSessions, 'dev');
  });

  it('takes warn, and nothing to check with off', () => {
    assert.equal(
      rbacCheckOptions({ ...gatewayFlags, 'rbac-check': 'warn' }, reads.text, nowhere)?.mode,
      'warn',
    );
    assert.equal(rbacCheckOptions({ ...gatewayFlags, 'rbac-check': 'off' }, reads.text, nowhere), undefined);
  });

  it('refuses another value, naming the choices', () => {
    refuses(
      () => rbacCheckOptions({ ...gatewayFlags, 'rbac-check': 'yes' }, reads.text, nowhere),
      '--rbac-check expects refuse, warn or off, got "yes"',
    );
  });
});

describe('buildOptions: what causeway build makes', () => {
  it('names the Worker after the module, writes into dist/<target> by default, and takes an https keys URL', () => {
    assert.deepEqual(
      buildOptions('src/My_Operator.ts', { target: 'workers', 'jwks-url': 'https://k.example/jwks.json' }),
      {
        target: 'workers',
        module: 'src/My_Operator.ts',
        out: resolve('dist/workers'),
        name: 'my-operator',
        jwksUrl: 'https://k.example/jwks.json',
      },
    );
    assert.deepEqual(buildOptions('op.ts', { target: 'node', out: 'image' }), {
      target: 'node',
      module: 'op.ts',
      out: resolve('image'),
      name: 'op',
    });
  });

  it('refuses an unknown target, a name Workers do not take, a plain-http keys URL, and Workers flags for node', () => {
    refuses(() => buildOptions('op.ts', { target: 'deno' }), '--target expects workers or node, got "deno"');
    refuses(
      () => buildOptions('op.ts', { target: 'workers', 'worker-name': 'My Worker' }),
      '--worker-name expects lowercase letters, digits and dashes (at most 63), got "My Worker"',
    );
    refuses(
      () => buildOptions('op.ts', { target: 'workers', 'jwks-url': 'http://keys.example.com/jwks.json' }),
      '--jwks-url expects an https URL, got "http://keys.example.com/jwks.json"',
    );
    refuses(
      () => buildOptions('op.ts', { target: 'node', 'worker-name': 'x' }),
      '--worker-name and --jwks-url are for --target workers',
    );
  });
});

describe('generated command lines (property-based)', () => {
  /** A file a flag names that is not there: the error names it, as reading it would. */
  const missing = (path: string): string => {
    throw new Error(`ENOENT: no such file, open '${path}'`);
  };
  const commands = ['run', 'gateway', 'dev', 'serve'] as const;
  const flagsOf = (name: string): Flag[] => [
    ...(COMMANDS.find((each) => each.name === name)?.groups ?? []).flatMap((group) => group.flags),
    ...(COMMON.flags as readonly Flag[]),
  ];
  const value = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        '',
        '0',
        '-1',
        '1.5',
        '1e3',
        '1e999',
        '0x10',
        ' 8',
        '8',
        '600',
        '99999999999999999999',
        'x',
        '-',
        '--',
        '=',
        'a=b',
        'http://x:1',
        'default',
      ),
    },
    oddString,
  );
  /** A token of a command line: a flag of the command's (long or short, its value apart or after =), another command's, or a stray. */
  const token = (name: (typeof commands)[number]) =>
    fc.oneof(
      // Flags of numbers more often: few among many, and each reads its value its own way.
      fc
        .tuple(
          fc.oneof(
            fc.constantFrom(...flagsOf(name)),
            fc.constantFrom(
              ...flagsOf(name).filter((flag) => /^<(n|s|port|days|seconds)>$/.test(flag.value ?? '')),
            ),
          ),
          value,
          fc.nat(3),
        )
        .map(([flag, given, form]) => {
          if (flag.value === undefined)
            return form === 0 && flag.short ? [`-${flag.short}`] : [`--${flag.name}`];
          if (form === 0) return [`--${flag.name}=${given}`];
          return form === 1 && flag.short ? [`-${flag.short}`, given] : [`--${flag.name}`, given];
        }),
      fc.constantFrom(
        ['--functions'],
        ['--unknown-flag'],
        ['-Z'],
        ['--'],
        ['-'],
        ['--verbose=yes'],
        ['operator.ts'],
      ),
      value.map((given) => [given]),
    );
  const commandLine = fc
    .constantFrom(...commands)
    .chain((name) => fc.array(token(name), { maxLength: 6 }).map((tokens) => [name, ...tokens.flat()]));

  it('gives a command options, or a usage error naming what is wrong, and never another error', () => {
    fc.assert(
      fc.property(commandLine, (argv) => {
        try {
          const line = parseCommandLine(argv, COMMANDS);
          if (!line.command || line.values.help || line.values.version) return;
          logLevel(line.values);
          logFormat(line.values, false, undefined);
          const values = line.values as GatewayOnlyValues;
          if (line.command.name === 'serve') serveOptions(line.values);
          if (line.command.name === 'run') gatewayOptions(values, missing, nowhere);
          if (line.command.name === 'dev') devGatewayOptions(values, missing, nowhere);
          if (line.command.name === 'gateway') {
            gatewayOnlyOptions(
              values,
              { text: missing, secret: (path) => new TextEncoder().encode(missing(path)) },
              nowhere,
            );
          }
          // Taken: a number is one as written in decimal digits, not whatever Number() makes of it.
          for (const flag of ['concurrency', 'function-timeout'] as const) {
            const given = values[flag];
            if (given) assert.match(given, /^\d+$/, `--${flag} ${JSON.stringify(given)} taken`);
          }
        } catch (error) {
          if (error instanceof assert.AssertionError) throw error;
          if (error instanceof Error && error.message.startsWith('ENOENT')) return;
          assert.ok(error instanceof UsageError, `a UsageError, not ${(error as Error).stack}`);
          const named =
            /^(needs |unexpected arguments|unknown command)/.test(error.message) ||
            argv.some(
              (each) =>
                each.startsWith('-') &&
                each.length > 1 &&
                error.message.includes(each.split('=')[0] as string),
            );
          assert.ok(named, `${error.message} names a flag of ${JSON.stringify(argv)}`);
        }
      }),
      { numRuns: 1000 },
    );
  });
});
