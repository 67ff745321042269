/**
 * The URLs the cluster may give the gateway: no userinfo, query or fragment; no loopback or
 * link-local host (nor a name resolving to one) unless allowed; and the globs a dev session's URL must
 * match, which never reach past a host, a path segment or into a port.
 */
import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { createServer } from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import { describe, it } from 'node:test';
import { httpTransport } from '../dispatch/transport.ts';
import {
  functionServiceUrlProblem,
  localHostProblem,
  matchesUrlGlob,
  refusingLocal,
  urlProblem,
} from './function-service-urls.ts';

const nowhere = async () => [] as string[];

describe('function service URLs', () => {
  it('refuse userinfo, a query, a fragment and what a parser reads otherwise than it is written', () => {
    assert.equal(urlProblem('https://billing.team-a:8443/base'), undefined);
    assert.equal(urlProblem('http://billing'), undefined);
    assert.match(urlProblem('http://user:password@billing') ?? '', /userinfo/);
    assert.match(urlProblem('http://@billing') ?? '', /userinfo/);
    assert.match(urlProblem('http://billing/api?') ?? '', /query/);
    assert.match(urlProblem('http://billing/api?x=/') ?? '', /query/);
    assert.match(urlProblem('http://billing/#') ?? '', /fragment/);
    assert.match(urlProblem('http://evil\\@billing') ?? '', /backslash/);
    assert.match(urlProblem('http://billing /x') ?? '', /space/);
    assert.match(urlProblem('file:///etc/passwd') ?? '', /not an http\(s\) URL/);
    assert.match(urlProblem('http://[::1') ?? '', /not a valid URL/);
  });

  it('know loopback, link-local and unspecified hosts, however written', () => {
    for (const host of [
      'localhost',
      'LOCALHOST.',
      'api.localhost',
      '127.0.0.1',
      '127.1.2.3',
      '169.254.169.254',
      '0.0.0.0',
      '[::1]',
      '[::]',
      '[fe80::1]',
      '[febf::1]',
      '[::ffff:7f00:1]',
      '[::ffff:a9fe:a9fe]',
      '[fd00:ec2::254]',
      '100.100.100.200',
    ]) {
      assert.ok(localHostProblem(host), host);
    }
    for (const host of [
      'billing.team-a.svc',
      '10.0.0.1',
      '192.168.1.1',
      '[fec0::1]',
      '[2001:db8::1]',
      '[fd00:ec2::253]',
      '100.100.100.201',
      'localhost.example',
    ]) {
      assert.equal(localHostProblem(host), undefined, host);
    }
  });

  it('refuse a FunctionService url on a local host, as written (in any notation) or resolved, unless allowed', async () => {
    for (const url of [
      'http://127.0.0.1:8080',
      'http://2130706433:8080',
      'http://0x7f.1',
      'http://[::ffff:127.0.0.1]',
      'http://169.254.169.254/latest/meta-data',
      'http://localhost:8080',
    ]) {
      const problem = await functionServiceUrlProblem(url, false, nowhere);
      assert.match(problem ?? '', /is refused: .*--allow-loopback-functions/, url);
      assert.equal(await functionServiceUrlProblem(url, true, nowhere), undefined, url);
    }
    const metadata = async (host: string) => (host === 'metadata.google.internal' ? ['169.254.169.254'] : []);
    assert.match(
      (await functionServiceUrlProblem('http://metadata.google.internal', false, metadata)) ?? '',
      /metadata\.google\.internal resolves to 169\.254\.169\.254/,
    );
    assert.equal(await functionServiceUrlProblem('http://billing.team-a:8080', false, metadata), undefined);
    // Not resolvable now: the call says so, and is tried again.
    const failing = async () => Promise.reject(new Error('ENOTFOUND'));
    assert.equal(await functionServiceUrlProblem('http://billing.team-a:8080', false, failing), undefined);
    // Refused whatever the flag: the URL itself, shown without its password.
    assert.equal(
      await functionServiceUrlProblem('http://mallory:hunter2@billing/x', true, nowhere),
      'url http://…@billing/x is refused: it holds a user name or password (userinfo)',
    );
  });
});

describe('refusingLocal: the address each connection uses', () => {
  it('refuses a name that resolves to a local address when connecting, though it resolved elsewhere when read (DNS rebinding)', async (t) => {
    const server = createServer((_request, response) => response.end('{}'));
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    t.after(() => new Promise((closed) => server.close(closed)));
    const { port } = server.address() as AddressInfo;
    // The name resolved to a public address when its URL was checked; now, to the gateway's own host.
    const rebound: LookupFunction = (_hostname, options, callback) =>
      options.all
        ? (callback as (error: null, addresses: LookupAddress[]) => void)(null, [
            { address: '127.0.0.1', family: 4 },
          ])
        : callback(null, '127.0.0.1', 4);
    const url = `http://billing.team-a:${port}`;
    assert.equal(await functionServiceUrlProblem(url, false, async () => ['203.0.113.7']), undefined);
    const guarded = httpTransport(url, undefined, 1, 1024, { lookup: refusingLocal(rebound) });
    t.after(() => guarded.close());
    await assert.rejects(
      guarded.send({ method: 'GET', path: '/healthz', headers: {}, body: undefined, timeoutMs: 5000 }),
      /billing\.team-a resolves to 127\.0\.0\.1, a loopback, link-local, unspecified or cloud metadata address: refused/,
    );
    // The same name resolving to an address a URL may reach is connected to (here, allowed by a resolver that says so).
    const plain = httpTransport(url, undefined, 1, 1024, { lookup: rebound });
    t.after(() => plain.close());
    assert.equal(
      (await plain.send({ method: 'GET', path: '/healthz', headers: {}, body: undefined, timeoutMs: 5000 }))
        .status,
      200,
    );
  });
});

describe('URL globs', () => {
  it('match a host, a port or a path segment, never further', () => {
    assert.ok(matchesUrlGlob('https://abc.ngrok.app', 'https://*.ngrok.app'));
    assert.ok(matchesUrlGlob('https://abc.ngrok.app/', 'https://*.ngrok.app'));
    assert.ok(matchesUrlGlob('https://ABC.ngrok.app:443', 'https://*.ngrok.app'));
    assert.ok(matchesUrlGlob('https://a.b.ngrok.app', 'https://*.ngrok.app'));
    assert.ok(matchesUrlGlob('http://127.0.0.1:41234', 'http://127.0.0.1:*'));
    assert.ok(matchesUrlGlob('https://dev.example.com/ada', 'https://dev.example.com/*'));

    assert.ok(!matchesUrlGlob('http://abc.ngrok.app', 'https://*.ngrok.app'), 'another scheme');
    assert.ok(!matchesUrlGlob('https://abc.ngrok.app:8443', 'https://*.ngrok.app'), 'another port');
    assert.ok(!matchesUrlGlob('https://evil.com/x.ngrok.app', 'https://*.ngrok.app'), 'a path');
    assert.ok(!matchesUrlGlob('https://evil.com?.ngrok.app', 'https://*.ngrok.app'), 'a query');
    assert.ok(!matchesUrlGlob('https://evil.com#.ngrok.app', 'https://*.ngrok.app'), 'a fragment');
    assert.ok(!matchesUrlGlob('https://x.ngrok.app@evil.com', 'https://*.ngrok.app'), 'userinfo');
    assert.ok(!matchesUrlGlob('https://abcngrok.app', 'https://*.ngrok.app'), 'the dot is no wildcard');
    assert.ok(!matchesUrlGlob('https://dev.example.com/ada/../bob/x', 'https://dev.example.com/*'));
    assert.ok(!matchesUrlGlob('http://127.0.0.1:41234', 'http://127.0.0.2:*'));
  });
});
