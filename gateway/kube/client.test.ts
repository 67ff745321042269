/** A client that logs in: again when its credentials are about to expire, and after a 401. */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { kubeConfigOf } from '../engines/login.ts';
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
