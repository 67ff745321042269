/**
 * What a FunctionService's spec allows of dev sessions, and its definition's guards: none unless
 * `allowed`, an hour at most by default, and a url pattern the apiserver checks before the gateway does.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '../../protocol/index.ts';
import {
  devSessionsAllowedBy,
  functionServiceDefinition,
  functionServicesPath,
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
