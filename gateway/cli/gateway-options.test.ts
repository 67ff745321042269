import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { noFiles, nowhere, reads, refuses } from '../../test/support/cli-options.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import { namespacesWarning } from './flags/objects.ts';
import { gatewayOptions } from './gateway-options.ts';

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

  it("leaves out the pod's namespace, the gateway's own, unless --serve-own-namespace", () => {
    const inPod = { podNamespace: 'causeway-system' };
    assert.equal(gatewayOptions({ namespace: ['team-a'] }, noFiles, inPod).ownNamespace, 'causeway-system');
    assert.equal(gatewayOptions({}, noFiles, inPod).ownNamespace, 'causeway-system');
    assert.equal(gatewayOptions({ 'serve-own-namespace': true }, noFiles, inPod).ownNamespace, undefined);
    assert.equal(gatewayOptions({}, noFiles, { contextNamespace: 'team-a' }).ownNamespace, undefined);
    refuses(
      () => gatewayOptions({ namespace: ['team-a', 'causeway-system'] }, noFiles, inPod),
      '--namespace names causeway-system, the namespace the gateway runs in, which it serves to no function service: run it in a namespace of its own, or give --serve-own-namespace',
    );
    assert.deepEqual(
      gatewayOptions({ namespace: ['causeway-system'], 'serve-own-namespace': true }, noFiles, inPod)
        .namespaces,
      ['causeway-system'],
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

  it("impersonates with --impersonate, its services' accounts in its own namespace: the pod's, else the context's", () => {
    assert.equal(gatewayOptions({}, noFiles, nowhere).impersonate, undefined);
    assert.equal(gatewayOptions({ impersonate: true }, noFiles, nowhere).impersonate, 'default');
    const inPod = { podNamespace: 'causeway-system', contextNamespace: 'dev' };
    assert.equal(gatewayOptions({ impersonate: true }, noFiles, inPod).impersonate, 'causeway-system');
    assert.equal(
      gatewayOptions({ impersonate: true }, noFiles, { contextNamespace: 'dev' }).impersonate,
      'dev',
    );
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
