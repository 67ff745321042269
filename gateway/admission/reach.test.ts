import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_IDENTITY } from '../identity.ts';
import type { KubeClient } from '../kube/client.ts';
import { createLogger } from '../logging.ts';
import { ALONE } from '../manager/role.ts';
import { DEFAULT_SETTINGS } from '../settings.ts';
import { Admission } from './admission.ts';
import { reachMode } from './reach.ts';

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

  it('says so when auto opens an ngrok tunnel, away from the apiserver and outside a pod, and says nothing otherwise', (t) => {
    const inPod = process.env.KUBERNETES_SERVICE_HOST;
    delete process.env.KUBERNETES_SERVICE_HOST; // outside a pod, wherever the test runs
    t.after(() => {
      if (inPod !== undefined) process.env.KUBERNETES_SERVICE_HOST = inPod;
    });
    const lines: string[] = [];
    const logger = createLogger({ format: 'text', sink: { write: (line) => lines.push(line) } });
    const remote = { server: 'https://203.0.113.7:6443' } as KubeClient;
    const local = { server: 'https://127.0.0.1:6443' } as KubeClient;
    const auto = { ...DEFAULT_SETTINGS.admission, reach: 'auto' as const };
    assert.equal(reachMode(auto, local, logger), 'local');
    assert.equal(reachMode({ ...auto, reach: 'ngrok' }, remote, logger), 'ngrok');
    assert.deepEqual(lines, [], 'a way chosen, or one on this machine, is not a surprise');
    assert.equal(reachMode(auto, remote, logger), 'ngrok');
    assert.match(
      lines.join(''),
      /WARNING --webhook-reach auto: the apiserver \(203\.0\.113\.7\) is not on this machine and this is no pod, so the admission webhooks are reached through an ngrok tunnel/,
    );
  });
});
