/**
 * What a FunctionService's spec allows of dev sessions, and its definition's guards: none unless
 * `allowed`, an hour at most by default, and a url pattern the apiserver checks before the gateway does.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { KubernetesObject } from '../../protocol/index.ts';
import { objectName, oddString } from '../../test/support/arbitraries.ts';
import { ServiceError } from '../dispatch/function-service.ts';
import { ScopeError } from '../dispatch/scope.ts';
import { ProtocolError } from '../dispatch/validation.ts';
import type { KubeClient } from '../kube/client.ts';
import { DEFAULT_SETTINGS } from '../settings.ts';
import {
  devSessionsAllowedBy,
  functionServiceDefinition,
  functionServiceEndpoint,
  functionServicesPath,
  type Known,
  statusError,
  statusOf,
  tlsSecretProblem,
} from './function-service-objects.ts';

const withSpec = (spec: Record<string, unknown>): KubernetesObject => ({
  apiVersion: 'causeway.dev/v1alpha1',
  kind: 'FunctionService',
  metadata: { name: 'billing', uid: 'u' },
  spec: { url: 'https://billing.team-a.svc', ...spec },
});

describe('FunctionService objects', () => {
  it('allow dev sessions only when spec.devSessions says allowed, for an hour at most unless it says otherwise', () => {
    assert.equal(devSessionsAllowedBy(withSpec({})), undefined);
    assert.equal(
      devSessionsAllowedBy(withSpec({ devSessions: { allowed: false, urls: ['https://*'] } })),
      undefined,
    );
    assert.equal(
      devSessionsAllowedBy(withSpec({ devSessions: { allowed: 'true', urls: ['https://*'] } })),
      undefined,
    );
    assert.deepEqual(
      devSessionsAllowedBy(withSpec({ devSessions: { allowed: true, urls: ['https://*.ngrok.app'] } })),
      {
        urls: ['https://*.ngrok.app'],
        maxSeconds: 3600,
      },
    );
    assert.deepEqual(
      devSessionsAllowedBy(
        withSpec({ devSessions: { allowed: true, urls: ['https://a', 7], maxSeconds: 60 } }),
      ),
      { urls: ['https://a'], maxSeconds: 60 },
    );
  });

  it('are defined with the devSessions field, the Refused phase, and a cap on maxSeconds', () => {
    const version = (functionServiceDefinition().spec as { versions: Array<Record<string, unknown>> })
      .versions[0];
    const schema = JSON.stringify(version);
    const spec = (
      version as {
        schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, unknown> } } } };
      }
    ).schema.openAPIV3Schema.properties.spec.properties;
    assert.deepEqual((spec.devSessions as { required: string[] }).required, ['allowed', 'urls']);
    assert.equal(
      (spec.devSessions as { properties: { maxSeconds: { maximum: number } } }).properties.maxSeconds.maximum,
      86_400,
    );
    assert.match(schema, /"enum":\["Ready","Unreachable","Refused"\]/);
  });

  it('escape the namespace in their API path', () => {
    assert.equal(
      functionServicesPath('a/../b'),
      '/apis/causeway.dev/v1alpha1/namespaces/a%2F..%2Fb/functionservices',
    );
  });
});

describe("a FunctionService's status.lastError", () => {
  it("is the gateway's reason for a failed call, never what the service answered", () => {
    const error = new ServiceError('GET https://x/healthz: 403 the secret page', {
      reason: "GET https://x/healthz: answered 403 (15 bytes, its error message in the gateway's log)",
    });
    assert.equal(statusError(error), error.reason);
  });

  it("escapes control characters and bounds a reason that quotes the service's words", () => {
    const said = `forged\nline${'x'.repeat(5000)}`;
    const shown = statusError(
      new ProtocolError(`https://x speaks protocol "${said}", expected "causeway.dev/v1"`),
    );
    assert.ok(!shown.includes('\n'), shown.slice(0, 80));
    assert.ok(shown.startsWith('https://x speaks protocol "forged\\nline'), shown.slice(0, 80));
    assert.ok(shown.length < 1100, `${shown.length} characters`);
    assert.ok(shown.endsWith("… (cut: the whole reason is in the gateway's log)"));
    assert.equal(statusError(new Error('short')), 'short');
  });
});

describe("a FunctionService's TLS Secret", () => {
  const withTls = (namespace: string, secretName: string): KubernetesObject => ({
    ...withSpec({ tls: { secretName } }),
    metadata: { name: 'billing', uid: 'u', namespace },
  });
  const settings = {
    ...DEFAULT_SETTINGS,
    signing: { ...DEFAULT_SETTINGS.signing, keys: { namespace: 'operators', name: 'causeway-signing-keys' } },
    calls: {
      ...DEFAULT_SETTINGS.calls,
      certificateAuthority: { namespace: 'operators', name: 'causeway-function-ca' },
    },
    admission: {
      ...DEFAULT_SETTINGS.admission,
      certificates: { namespace: 'operators', name: 'causeway-webhooks' },
    },
  };

  it('may not be one the gateway keeps its own keys in, in that namespace', () => {
    for (const name of [
      'causeway-function-ca',
      'causeway-signing-keys',
      'causeway-webhooks',
      'causeway-webhooks-ca',
    ]) {
      assert.equal(
        tlsSecretProblem(withTls('operators', name), settings),
        `spec.tls.secretName names operators/${name}, a Secret the gateway keeps its own keys in, ` +
          "which the service's certificate would overwrite",
      );
    }
    assert.equal(tlsSecretProblem(withTls('operators', 'billing-tls'), settings), undefined);
    assert.equal(
      tlsSecretProblem(withTls('team-a', 'causeway-function-ca'), settings),
      undefined,
      'another namespace',
    );
  });
});

describe('generated FunctionService objects (property-based)', () => {
  /** A spec as the CRD lets the apiserver store one: its types checked there, its strings any. */
  const scopeEntry = fc.oneof(
    fc.constantFrom('kopfexamples.kopf.dev', 'pods', '*', 'team-*', '!kube-*'),
    oddString,
  );
  const spec = fc.record(
    {
      url: fc.constantFrom('http://billing:8080', 'https://billing.team-a.svc', 'https://x/', 'http://é'),
      serviceName: fc.constantFrom('billing', 'b', 'a-1'),
      caBundle: oddString,
      tls: fc.record({ secretName: fc.constantFrom('billing-tls', 'a.b') }),
      timeoutSeconds: fc.integer({ min: 1, max: 600 }),
      concurrency: fc.integer({ min: 1, max: 1000 }),
      scope: fc.record(
        {
          resources: fc.array(scopeEntry, { maxLength: 3 }),
          admission: fc.array(scopeEntry, { maxLength: 2 }),
          children: fc.array(scopeEntry, { maxLength: 2 }),
          namespaces: fc.array(scopeEntry, { maxLength: 2 }),
        },
        { requiredKeys: ['resources'], noNullPrototype: true },
      ),
      devSessions: fc.record({
        allowed: fc.boolean(),
        urls: fc.array(fc.constantFrom('https://*.ngrok.app', 'http://x'), { maxLength: 2 }),
        maxSeconds: fc.integer({ min: 1, max: 86_400 }),
      }),
    },
    { requiredKeys: ['url'], noNullPrototype: true },
  );
  const noSecrets = {
    get: async () => {
      throw new Error('no Secret expected');
    },
  } as unknown as KubeClient;

  it('gives the endpoint its spec says, or refuses its scope naming the entry', async () => {
    await fc.assert(
      fc.asyncProperty(objectName, spec, async (name, given) => {
        const object = { ...withSpec({}), metadata: { name, uid: 'u' }, spec: given };
        let endpoint: Awaited<ReturnType<typeof functionServiceEndpoint>>;
        try {
          endpoint = await functionServiceEndpoint(noSecrets, object);
        } catch (error) {
          assert.ok(error instanceof ScopeError, `a ScopeError, not ${error}`);
          assert.match(error.message, /^spec\.scope\.(resources|admission|children|namespaces) has /);
          return;
        }
        assert.equal(endpoint.name, given.serviceName ?? name);
        assert.equal(endpoint.url, given.url);
        assert.equal(
          endpoint.timeoutMs,
          given.timeoutSeconds === undefined ? undefined : given.timeoutSeconds * 1000,
        );
        assert.equal(endpoint.concurrency, given.concurrency);
        assert.deepEqual(endpoint.scope, given.scope && { ...given.scope });
        const allowed = devSessionsAllowedBy(object);
        assert.equal(allowed === undefined, given.devSessions?.allowed !== true);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('the status of a FunctionService', () => {
  const known = (fields: Partial<Known>): Known => ({
    object: { ...withSpec({}), metadata: { name: 'billing', uid: 'u', generation: 2 } },
    serviceName: 'billing',
    endpoint: '{}',
    failures: 0,
    ...fields,
  });
  const served = { protocol: 'causeway/v1', handlers: ['create_fn'] };
  const state = { down: undefined, away: undefined, refused: undefined };

  it('is Refused, with why, for a manifest the gateway refuses, and Unreachable for an outage', () => {
    const beyond = 'handler "steal" of "billing" names secrets, outside the scope pinned for it';
    assert.deepEqual(statusOf(known({ error: beyond, refused: true }), undefined), {
      phase: 'Refused',
      protocol: null,
      handlers: null,
      lastError: beyond,
      observedGeneration: 2,
      devSession: null,
    });
    const outage = statusOf(known({ error: 'connect ECONNREFUSED', refused: false }), undefined);
    assert.equal(outage.phase, 'Unreachable');
    assert.equal(outage.lastError, 'connect ECONNREFUSED');
  });

  it('is Refused while the apiserver refuses its webhooks, its handlers served, and Ready once they are taken', () => {
    const webhooks = 'the apiserver refuses its validating webhooks: 422 Invalid';
    assert.deepEqual(statusOf(known({ served }), { ...state, refused: webhooks }), {
      phase: 'Refused',
      protocol: 'causeway/v1',
      handlers: ['create_fn'],
      lastError: webhooks,
      observedGeneration: 2,
      devSession: null,
    });
    assert.equal(statusOf(known({ served }), state).phase, 'Ready');
  });
});
