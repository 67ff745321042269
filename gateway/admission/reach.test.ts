import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_IDENTITY } from '../identity.ts';
import type { KubeClient } from '../kube/client.ts';
import { createLogger } from '../logging.ts';
import { ALONE } from '../manager/role.ts';
import { DEFAULT_SETTINGS } from '../settings.ts';
import { Admission } from './admission.ts';

describe('where the apiserver reaches the webhook server', () => {
  it('refuses to listen at any free port when reached through a Service, which sends the apiserver to a port of its own', async () => {
    const admission = new Admission({
      client: { server: 'https://10.0.0.1' } as KubeClient, // asked nothing: it stops before
      identity: DEFAULT_IDENTITY,
      settings: {
        ...DEFAULT_SETTINGS.admission,
        reach: 'service',
        service: { namespace: 'operators', name: 'webhooks', port: 443 },
      },
      namespaces: undefined,
      serves: () => true,
      logger: createLogger({ sink: { write: () => {} } }),
    });
    await assert.rejects(
      admission.start(ALONE),
      /listen at the port it sends the apiserver to \(its targetPort\): give it with --webhook-listen/,
    );
    assert.equal(admission.serving, false);
  });
});
