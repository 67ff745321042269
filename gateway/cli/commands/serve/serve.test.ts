import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { issueServingCertificate, newAuthority } from '../../../../webhooks/certificates.ts';
import { serveFetch } from './serve.ts';

describe('a function service served over HTTPS', () => {
  it('closes at once, though a client is still in its TLS handshake', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'causeway-serve-'));
    const served = await issueServingCertificate(await newAuthority('serve test'), ['127.0.0.1']);
    const tls = { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
    await writeFile(tls.certFile, served.cert);
    await writeFile(tls.keyFile, served.key);
    const server = await serveFetch({ fetch: () => new Response('{}') }, { port: 0, host: '127.0.0.1', tls });
    // A connection that never says hello: Node would wait for it for its handshake timeout (120 s).
    const port = Number(new URL(server.url).port);
    const silent = connect(port, '127.0.0.1');
    await new Promise((resolve) => silent.once('connect', resolve));
    const closed = new Promise((resolve) => silent.once('close', resolve));
    await server.close();
    await closed;
    const again = connect(port, '127.0.0.1');
    await assert.rejects(
      new Promise((resolve, reject) => again.once('connect', resolve).once('error', reject)),
      /ECONNREFUSED/,
      'no longer listening',
    );
  });
});
