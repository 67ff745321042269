/** The liveness of the connections to the API server: the deadline of PING acks, and what a silent session takes down. */
import assert from 'node:assert/strict';
import { createSecureServer, type Http2Session } from 'node:http2';
import { describe, it, type TestContext } from 'node:test';
import { startStallingProxy } from '../../test/support/stalling-proxy.ts';
import { renewCertificates } from '../../webhooks/certificates.ts';
import { createLogger } from '../logging.ts';
import { kubeConfigOf } from '../services/login.ts';
import { KubeClient } from './client.ts';
import { SilentConnection } from './errors.ts';
import { Deadline } from './liveness.ts';

describe('Deadline', () => {
  it('calls once silent for the limit, and each heard() gives the full limit again', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
    const silences: number[] = [];
    const deadline = new Deadline(1000, 500, (silentMs) => silences.push(silentMs));
    t.mock.timers.tick(999);
    deadline.heard();
    t.mock.timers.tick(999);
    assert.deepEqual(silences, []);
    t.mock.timers.tick(1);
    assert.deepEqual(silences, [1000]);
    t.mock.timers.tick(5000);
    assert.deepEqual(silences, [1000], 'once');
  });

  it('gives the answers a grace when the event loop itself was held past the deadline', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
    const silences: number[] = [];
    const deadline = new Deadline(1000, 500, (silentMs) => silences.push(silentMs));
    t.mock.timers.tick(4000); // one long synchronous task: the timer runs 3 s late
    assert.deepEqual(silences, [], 'an ack may be waiting unread');
    t.mock.timers.tick(499);
    assert.deepEqual(silences, []);
    t.mock.timers.tick(1); // none came in the grace
    assert.deepEqual(silences, [4500]);
    deadline.stop();
  });

  it('calls nothing once stopped', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
    const silences: number[] = [];
    new Deadline(1000, 500, (silentMs) => silences.push(silentMs)).stop();
    t.mock.timers.tick(10_000);
    assert.deepEqual(silences, []);
  });
});

/** Made once for the file: making keys takes seconds. */
const CERTIFICATES = renewCertificates(undefined, ['127.0.0.1']).then(({ certificates }) => certificates);

/**
 * An HTTP/2 API server on loopback (HTTP/1.1 too): `/api` answers, `/watch` streams a line at once and
 * holds; with its sessions, the watches' HTTP versions and the other requests' methods and versions.
 */
async function apiServer(t: TestContext) {
  const certificates = await CERTIFICATES;
  const sessions: Http2Session[] = [];
  const watchVersions: string[] = [];
  const requestVersions: string[] = [];
  const server = createSecureServer(
    { key: certificates.key, cert: certificates.cert, allowHTTP1: true },
    (request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      if (request.url?.startsWith('/watch')) {
        watchVersions.push(request.httpVersion);
        response.write('{"type":"BOOKMARK"}\n');
      } else {
        requestVersions.push(`${request.method} ${request.httpVersion}`);
        response.end('{"kind":"APIVersions"}');
      }
    },
  );
  server.on('session', (session) => sessions.push(session));
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  t.after(() => {
    for (const session of sessions) session.destroy();
    server.close();
  });
  const { port } = server.address() as { port: number };
  const target = { server: `https://127.0.0.1:${port}`, token: 't', caPem: certificates.ca.cert };
  return { target, sessions, watchVersions, requestVersions };
}

const LIVENESS = { pingIntervalMs: 50, pingTimeoutMs: 200 };

function jsonLogger() {
  const lines: string[] = [];
  const logger = createLogger({
    level: 'debug',
    format: 'json',
    sink: { write: (line) => lines.push(line) },
  });
  return { logger, lines };
}

/** How the client reaches the server: straight, or through an HTTP proxy (a kubeconfig's proxy-url). */
const ROUTES = [
  { route: '', tunnel: false },
  { route: ' through an HTTP proxy (proxy-url)', tunnel: true },
];

/** A kubeconfig of `server`, reached through the HTTP proxy at `proxyUrl` if one is given. */
function configOf({ server, caPem }: { server: string; caPem: string }, proxyUrl?: string) {
  const config = kubeConfigOf({ server, token: 't', caData: caPem });
  const [cluster, user] = [config.getCurrentCluster(), config.getCurrentUser()];
  if (proxyUrl && cluster && user) config.loadFromClusterAndUser({ ...cluster, proxyUrl }, user);
  return config;
}

describe('KubeClient connections', () => {
  for (const { route, tunnel } of ROUTES) {
    it(`sends reads and watches over HTTP/2, and the requests with a body over HTTP/1.1${route}`, async (t) => {
      const { target, watchVersions, requestVersions } = await apiServer(t);
      const proxy = tunnel ? await startStallingProxy(target, { tunnel }) : undefined;
      t.after(() => proxy?.close());
      const client = await KubeClient.fromConfig(configOf(target, proxy?.target.proxyUrl));
      await client.get('/api');
      await client.patch('/api', 'merge', { metadata: { labels: { a: 'b' } } });
      await client.request('/api', { method: 'PUT', body: { kind: 'Lease' } });
      await client.request('/api', { method: 'DELETE', body: { preconditions: { resourceVersion: '1' } } });
      await client.request('/api', { method: 'DELETE' });
      const watch = await client.stream('/watch', {});
      watch.destroy();
      // A request stream that sends DATA frames is what Node's HTTP/2 looped on (ApiConnections.writes).
      assert.deepEqual(requestVersions, ['GET 2.0', 'PATCH 1.1', 'PUT 1.1', 'DELETE 1.1', 'DELETE 2.0']);
      assert.deepEqual(watchVersions, ['2.0']);
    });
  }
});

describe('KubeClient over connections that fall silent', () => {
  for (const { route, tunnel } of ROUTES) {
    it(`closes them all when one is silent${route}, retries the request under way, ends the watches, and says so once`, {
      timeout: 10_000,
    }, async (t) => {
      const { target, watchVersions } = await apiServer(t);
      const proxy = await startStallingProxy(target, { tunnel });
      t.after(() => proxy.close());
      const { logger, lines } = jsonLogger();
      const client = await KubeClient.fromConfig(configOf(proxy.target, proxy.target.proxyUrl), undefined, {
        logger,
        liveness: LIVENESS,
      });
      assert.deepEqual(await client.get('/api'), { kind: 'APIVersions' });
      const watches = await Promise.all([1, 2].map(() => client.stream('/watch', {})));
      assert.deepEqual(watchVersions, ['2.0', '2.0'], 'the watches share an HTTP/2 session, PINGed too');
      const watchesEnded = watches.map((body) =>
        assert.rejects(async () => {
          for await (const _chunk of body);
        }, SilentConnection),
      );

      proxy.stall();
      assert.deepEqual(await client.get('/api'), { kind: 'APIVersions' }, 'answered on a new connection');
      await Promise.all(watchesEnded);
      const warnings = lines.filter((line) => /"level":"warning"/.test(line));
      assert.equal(warnings.length, 1, warnings.join('\n'));
      assert.match(warnings[0] as string, /fell silent \(no answer to PING for [\d.]+ s\)/);
      assert.match(warnings[0] as string, /"connections":2/, "the requests' connection and the watches'");
    });
  }

  it('keeps connections whose PINGs are answered, however long they carry nothing', async (t) => {
    const { target, sessions } = await apiServer(t);
    const { logger, lines } = jsonLogger();
    const client = await KubeClient.fromConfig(configOf(target), undefined, {
      logger,
      liveness: LIVENESS,
    });
    const watch = await client.stream('/watch', {});
    const session = sessions[0] as Http2Session;
    // Ten PINGs answered: twice as long as the deadline of one; or fewer, if the session was closed.
    const pings = await new Promise<number>((done) => {
      let count = 0;
      session.on('ping', () => ++count === 10 && done(count));
      session.on('close', () => done(count));
    });
    assert.equal(pings, 10, 'the session outlived ten PINGs');
    assert.equal(watch.destroyed, false, 'the watch is still open');
    assert.deepEqual(lines, []);
    watch.destroy();
  });
});
