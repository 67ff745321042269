import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '../../protocol/index.ts';
import { functionServiceSecrets } from './served.ts';

const functionService = (name: string, spec: Record<string, unknown>): KubernetesObject => ({
  apiVersion: 'causeway.dev/v1alpha1',
  kind: 'FunctionService',
  metadata: { name, namespace: 'operators', uid: name },
  spec: { url: `https://${name}.operators.svc:8080`, ...spec },
});

describe('functionServiceSecrets', () => {
  it('names the Secrets of their certificates and of their shared secrets, in their namespace', () => {
    assert.deepEqual(
      functionServiceSecrets([
        functionService('kopfexample', { tls: { secretName: 'kopfexample-functions-tls' } }),
        functionService('billing', { secretRef: { name: 'billing-secret', key: 'secret' } }),
        functionService('plain', {}),
      ]),
      {
        certificates: [{ namespace: 'operators', name: 'kopfexample-functions-tls' }],
        read: [{ namespace: 'operators', name: 'billing-secret' }],
      },
    );
  });
});
