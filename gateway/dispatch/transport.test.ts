import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { httpTransport, inProcessTransport } from './transport.ts';

const exchange = (timeoutMs: number) =>
  ({ method: 'POST', path: '/invoke', headers: {}, body: new Uint8Array(), timeoutMs }) as const;

describe('transports', () => {
  it('in-process: a handler that never answers is given up after the timeout, and its request aborted', async () => {
    let seen: Request | undefined;
    const transport = inProcessTransport({
      fetch: (request) => {
        seen = request;
        return new Promise<Response>(() => {});
      },
    });
    await assert.rejects(transport.send(exchange(50)), {
      name: 'TimeoutError',
      message: 'no answer within 50 ms',
    });
    assert.equal(seen?.signal.aborted, true, 'the handler can see that it was given up');
  });

  it('in-process: an answered call is done with its deadline: its signal never aborts afterwards', async () => {
    const signals: AbortSignal[] = [];
    const transport = inProcessTransport({
      fetch: (request) => {
        signals.push(request.signal);
        return request.url.endsWith('/hang') ? new Promise<Response>(() => {}) : new Response('{}');
      },
    });
    assert.equal((await transport.send(exchange(50))).status, 200);
    // A later call with the same deadline times out: the first call's deadline has passed by then too.
    await assert.rejects(transport.send({ ...exchange(50), path: '/hang' }), { name: 'TimeoutError' });
    assert.deepEqual(
      signals.map((signal) => signal.aborted),
      [false, true],
    );
  });

  it('over HTTP: a service that never answers is given up after the timeout', async (t) => {
    const server = createServer((request, response) => {
      if (request.url === '/hang') return; // never answers
      response.end('{}');
    });
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    const transport = httpTransport(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    t.after(async () => {
      server.closeAllConnections();
      await transport.close();
      await new Promise((closed) => server.close(closed));
    });

    assert.equal((await transport.send(exchange(30_000))).status, 200);
    await assert.rejects(transport.send({ ...exchange(50), path: '/hang' }), {
      name: 'TimeoutError',
      message: 'no answer within 50 ms',
    });
  });
});
