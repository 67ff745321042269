import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  chooseMode,
  type Forward,
  localHosts,
  localReach,
  ngrokReach,
  serviceReach,
  TunnelError,
} from './reach.ts';

describe('how the apiserver reaches the webhook server', () => {
  it('auto: service in a pod, local when the apiserver is on this host, ngrok otherwise', () => {
    const here = { localAddresses: ['10.1.2.3'] };
    assert.equal(chooseMode('auto', { inPod: true, apiserverHost: '10.96.0.1', ...here }), 'service');
    assert.equal(chooseMode('auto', { inPod: false, apiserverHost: '127.0.0.1', ...here }), 'local');
    assert.equal(chooseMode('auto', { inPod: false, apiserverHost: 'localhost', ...here }), 'local');
    assert.equal(chooseMode('auto', { inPod: false, apiserverHost: '[::1]', ...here }), 'local');
    assert.equal(chooseMode('auto', { inPod: false, apiserverHost: '10.1.2.3', ...here }), 'local');
    assert.equal(chooseMode('auto', { inPod: false, apiserverHost: 'k8s.example.com', ...here }), 'ngrok');
    assert.equal(chooseMode('local', { inPod: true, apiserverHost: 'k8s.example.com' }), 'local', 'as asked');
  });

  it('local and service name the server by URL and by Service, with the CA bundle', async () => {
    assert.deepEqual((await localReach()({ host: '127.0.0.1', port: 9443 })).clientConfig, {
      url: 'https://127.0.0.1:9443',
    });
    const service = { namespace: 'ops', name: 'gateway', port: 443 };
    const way = await serviceReach(service)({ host: '0.0.0.0', port: 9443 });
    assert.deepEqual([way.clientConfig, way.bundle], [{ service }, true]);
  });

  it('local with a URL in front (a load balancer over replicas): names that URL, and its host in the certificate', async () => {
    const way = await localReach('https://10.0.0.5:9443')({ host: '127.0.0.1', port: 41234 });
    assert.deepEqual([way.clientConfig, way.bundle], [{ url: 'https://10.0.0.5:9443' }, true]);
    assert.deepEqual(localHosts('127.0.0.1', 'https://10.0.0.5:9443'), [
      '127.0.0.1',
      'localhost',
      '10.0.0.5',
    ]);
    assert.deepEqual(localHosts('0.0.0.0', 'https://[::1]:9443'), ['127.0.0.1', 'localhost', '::1']);
    assert.deepEqual(localHosts('127.0.0.1', 'https://127.0.0.1:9443'), ['127.0.0.1', 'localhost']);
    assert.deepEqual(localHosts('127.0.0.1'), ['127.0.0.1', 'localhost'], 'this host only, without one');
  });

  it('ngrok: forwards to the server over TLS with the given authtoken, and names the tunnel without a CA bundle', async () => {
    const asked: unknown[] = [];
    let closed = false;
    const forward: Forward = async (config) => {
      asked.push(config);
      return {
        url: () => 'https://abc-123.ngrok-free.app',
        close: async () => {
          closed = true;
        },
      };
    };
    const way = await ngrokReach({ authtoken: 'token', domain: 'hooks.example.com', forward })({
      host: '127.0.0.1',
      port: 9443,
    });
    assert.deepEqual(asked, [
      {
        addr: 'https://127.0.0.1:9443',
        verify_upstream_tls: false,
        authtoken: 'token',
        domain: 'hooks.example.com',
      },
    ]);
    assert.deepEqual([way.clientConfig, way.bundle], [{ url: 'https://abc-123.ngrok-free.app' }, false]);
    await way.close();
    assert.equal(closed, true);
  });

  it('ngrok: takes the authtoken from NGROK_AUTHTOKEN when none is given', async () => {
    const asked: Array<Record<string, unknown>> = [];
    await ngrokReach({
      forward: async (config) => {
        asked.push(config);
        return { url: () => 'https://x.ngrok.app', close: async () => {} };
      },
    })({ host: '127.0.0.1', port: 1 });
    assert.equal(asked[0]?.authtoken_from_env, true);
    assert.equal(asked[0]?.authtoken, undefined);
  });

  it('ngrok, for real: with an authtoken ngrok does not know (or no way to ngrok), it fails, saying what it needs', async () => {
    await assert.rejects(
      ngrokReach({ authtoken: 'not-a-real-token' })({ host: '127.0.0.1', port: 9 }),
      (error) => {
        assert.ok(error instanceof TunnelError);
        assert.match(error.message, /^the ngrok tunnel could not open: \S/);
        assert.match(error.message, /NGROK_AUTHTOKEN/);
        assert.match(error.message, /--webhook-reach local or service/);
        return true;
      },
    );
  });
});
