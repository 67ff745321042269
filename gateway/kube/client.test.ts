/** A client that logs in: again when its credentials are about to expire, and after a 401. */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { kubeConfigOf } from '../services/login.ts';
import { KubeClient, renewalDue } from './client.ts';
import { ApiError } from './errors.ts';

/** An API server that takes only the tokens `accepted` says, and counts who asked. */
async function apiServer(t: TestContext, accepted: (token: string) => boolean): Promise<string> {
  const server = createServer((request, response) => {
    const token = (request.headers.authorization ?? '').replace(/^Bearer /, '');
    const ok = accepted(token);
    response.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
    response.end(JSON.stringify(ok ? { kind: 'APIVersions', token } : { kind: 'Status', code: 401 }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('renewalDue', () => {
  it('is due a tenth of the credentials’ life before they expire, 30 s at most', () => {
    assert.equal(renewalDue(0, 10_000, 8_999), false);
    assert.equal(renewalDue(0, 10_000, 9_000), true);
    assert.equal(renewalDue(0, 3600_000, 3569_999), false);
    assert.equal(renewalDue(0, 3600_000, 3570_000), true);
  });
});

describe('KubeClient from a login', () => {
  it('logs in again after a 401 and retries the request once, with the new credentials', async (t) => {
    const server = await apiServer(t, (token) => token === 'fresh');
    const tokens = ['revoked', 'fresh'];
    let logins = 0;
    const client = await KubeClient.fromLogin(async () => {
      const token = tokens[logins++] as string;
      return { config: kubeConfigOf({ server, token, insecure: true }) };
    });
    assert.deepEqual(await client.get('/api'), { kind: 'APIVersions', token: 'fresh' });
    assert.equal(logins, 2);
    assert.deepEqual(await client.get('/api'), { kind: 'APIVersions', token: 'fresh' });
    assert.equal(logins, 2, 'no login while the credentials work');
  });

  it('logs in again before the credentials expire, and only once for requests at the same time', async (t) => {
    const server = await apiServer(t, () => true);
    let logins = 0;
    const client = await KubeClient.fromLogin(async () => {
      logins++;
      return {
        config: kubeConfigOf({ server, token: `token-${logins}`, insecure: true }),
        expiresAt: Date.now() + 200,
      };
    });
    assert.deepEqual(await client.get('/api'), { kind: 'APIVersions', token: 'token-1' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const answers = await Promise.all([client.get('/api'), client.get('/apis'), client.get('/version')]);
    assert.deepEqual(answers, Array(3).fill({ kind: 'APIVersions', token: 'token-2' }));
    assert.equal(logins, 2);
  });

  it('refuses credentials for another server, and a client of a kubeconfig does not log in on a 401', async (t) => {
    const server = await apiServer(t, (token) => token === 'good');
    let logins = 0;
    const client = await KubeClient.fromLogin(async () => {
      logins++;
      return {
        config: kubeConfigOf({
          server: logins === 1 ? server : 'https://elsewhere:6443',
          token: 'bad',
          insecure: true,
        }),
      };
    });
    await assert.rejects(
      client.get('/api'),
      /the login gave credentials for https:\/\/elsewhere:6443, not for http/,
    );
    const plain = await KubeClient.fromConfig(kubeConfigOf({ server, token: 'bad', insecure: true }));
    await assert.rejects(plain.get('/api'), (error) => error instanceof ApiError && error.status === 401);
  });
});

/** A server not listening yet, and the URL of the port it will listen on, where nothing listens now. */
async function closedPort(): Promise<{ server: Server; url: string }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return { server, url: `http://127.0.0.1:${port}` };
}

describe('KubeClient retries', () => {
  /** An API server that breaks the connection of the first request of each method, once it has read it. */
  async function breakingServer(t: TestContext, firstAnswer: 'break' | 'retry-after') {
    const requests: string[] = [];
    const server = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        requests.push(request.method as string);
        if (requests.filter((method) => method === request.method).length > 1) {
          response.writeHead(201, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ kind: 'ConfigMap' }));
        } else if (firstAnswer === 'break') request.socket.destroy();
        else {
          response.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
          response.end(JSON.stringify({ kind: 'Status', code: 429 }));
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => {
      server.closeAllConnections();
      server.close();
    });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = await KubeClient.fromLogin(async () => ({
      config: kubeConfigOf({ server: url, token: 'token', insecure: true }),
    }));
    return { client, requests };
  }
  const create = { method: 'POST', body: { kind: 'ConfigMap' } };

  it('does not try a create again when its connection broke after it was sent: it may have been made', async (t) => {
    const { client, requests } = await breakingServer(t, 'break');
    await assert.rejects(client.request('/api/v1/namespaces/default/configmaps', create));
    assert.deepEqual(requests, ['POST'], 'one try: a second could make it twice, or meet 409 AlreadyExists');
    assert.deepEqual(await client.get('/api/v1/namespaces/default/configmaps'), { kind: 'ConfigMap' });
    assert.deepEqual(requests, ['POST', 'GET', 'GET'], 'a read is tried again');
  });

  it('tries a create again when the apiserver said to, with Retry-After', async (t) => {
    const { client, requests } = await breakingServer(t, 'retry-after');
    assert.deepEqual(await client.request('/api/v1/namespaces/default/configmaps', create), {
      kind: 'ConfigMap',
    });
    assert.deepEqual(requests, ['POST', 'POST']);
  });

  it('tries a create again when nothing listened: it never reached a server', async (t) => {
    const { server, url } = await closedPort();
    const created: string[] = [];
    server.on('request', (request, response) => {
      created.push(request.method as string);
      response.writeHead(201, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ kind: 'ConfigMap' }));
    });
    t.after(() => server.close());
    const answers: (number | undefined)[] = [];
    const client = await KubeClient.fromLogin(
      async () => ({ config: kubeConfigOf({ server: url, token: 'token', insecure: true }) }),
      (_method, _path, status) => {
        answers.push(status);
        // Refused once: the server listens from then on.
        if (!server.listening) server.listen(Number(new URL(url).port), '127.0.0.1');
      },
    );
    assert.deepEqual(await client.request('/api/v1/namespaces/default/configmaps', create), {
      kind: 'ConfigMap',
    });
    assert.equal(answers[0], undefined, 'the first try found no one');
    assert.equal(answers.at(-1), 201);
    assert.deepEqual(created, ['POST'], 'made once');
  });
});

describe('KubeClient impersonating a ServiceAccount', () => {
  /** An API server that records who each request acts as, and refuses the writes of `refused`. */
  async function recordingServer(t: TestContext, refused: string) {
    const seen: Array<{ method: string; token: string; as: string | undefined }> = [];
    const server = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        const as = request.headers['impersonate-user'] as string | undefined;
        const token = (request.headers.authorization ?? '').replace(/^Bearer /, '');
        seen.push({ method: request.method as string, token, as });
        // The account is refused its writes, and reads of what ends in /forbidden.
        const forbidden = request.method !== 'GET' || request.url?.endsWith('/forbidden');
        const status = token === 'stale' ? 401 : as === refused && forbidden ? 403 : 200;
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify(
            status === 403
              ? {
                  kind: 'Status',
                  reason: 'Forbidden',
                  message: `configmaps is forbidden: User "${as}" cannot create resource "configmaps"`,
                }
              : { kind: status === 200 ? 'ConfigMap' : 'Status' },
          ),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => {
      server.closeAllConnections();
      server.close();
    });
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
  }
  const billing = { namespace: 'shop', name: 'billing' };
  const create = { method: 'POST', body: { kind: 'ConfigMap' } };

  it('sends Impersonate-User as the account on its view, and nothing of it on the gateway’s own requests', async (t) => {
    const { url, seen } = await recordingServer(t, 'nobody');
    const client = await KubeClient.fromConfig(
      kubeConfigOf({ server: url, token: 'gateway', insecure: true }),
    );
    const view = client.impersonating(billing);
    assert.equal(client.impersonating({ ...billing }), view, 'one view per account');
    assert.deepEqual(view.impersonated, billing);
    await view.request('/api/v1/namespaces/shop/configmaps', create);
    await client.request('/api/v1/namespaces/shop/configmaps', create);
    assert.deepEqual(seen, [
      { method: 'POST', token: 'gateway', as: 'system:serviceaccount:shop:billing' },
      { method: 'POST', token: 'gateway', as: undefined },
    ]);
  });

  it('fails a write the account may not make with the apiserver’s reason, once, never again as the gateway', async (t) => {
    const { url, seen } = await recordingServer(t, 'system:serviceaccount:shop:billing');
    const client = await KubeClient.fromConfig(
      kubeConfigOf({ server: url, token: 'gateway', insecure: true }),
    );
    await assert.rejects(
      client.impersonating(billing).request('/api/v1/namespaces/shop/configmaps', create),
      (error: unknown) =>
        error instanceof ApiError &&
        error.status === 403 &&
        error.message.includes(
          'User "system:serviceaccount:shop:billing" cannot create resource "configmaps"',
        ) &&
        error.message.includes('written as system:serviceaccount:shop:billing (--impersonate)') &&
        error.message.includes('`causeway rbac --impersonate`'),
    );
    assert.deepEqual(
      seen.map(({ as }) => as),
      ['system:serviceaccount:shop:billing'],
    );
  });

  it('fails a read the account may not make saying it was read as the account (a child before its apply)', async (t) => {
    const { url, seen } = await recordingServer(t, 'system:serviceaccount:shop:billing');
    const client = await KubeClient.fromConfig(
      kubeConfigOf({ server: url, token: 'gateway', insecure: true }),
    );
    await assert.rejects(
      client.impersonating(billing).get('/api/v1/namespaces/shop/configmaps/forbidden'),
      (error: unknown) =>
        error instanceof ApiError &&
        error.status === 403 &&
        error.message.includes('read as system:serviceaccount:shop:billing (--impersonate)'),
    );
    assert.deepEqual(
      seen.map(({ method, as }) => [method, as]),
      [['GET', 'system:serviceaccount:shop:billing']],
    );
  });

  it('shares the login of the client it views: a 401 on the view logs in once, for both', async (t) => {
    const { url, seen } = await recordingServer(t, 'nobody');
    let logins = 0;
    const client = await KubeClient.fromLogin(async () => {
      logins += 1;
      return {
        config: kubeConfigOf({ server: url, token: logins === 1 ? 'stale' : 'fresh', insecure: true }),
      };
    });
    await client.impersonating(billing).request('/api/v1/namespaces/shop/configmaps', create);
    await client.get('/api/v1/namespaces/shop/configmaps/x');
    assert.equal(logins, 2);
    assert.deepEqual(
      seen.map(({ token, as }) => [token, as]),
      [
        ['stale', 'system:serviceaccount:shop:billing'],
        ['fresh', 'system:serviceaccount:shop:billing'],
        ['fresh', undefined],
      ],
    );
  });
});
