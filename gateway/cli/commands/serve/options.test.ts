import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { refuses } from '../../../../test/support/cli-options.ts';
import { serveOptions } from './options.ts';

describe('serveOptions', () => {
  it('listens on 0.0.0.0:8080 unless told, over HTTPS with a certificate and its key', () => {
    assert.deepEqual(serveOptions({}), { port: 8080, host: '0.0.0.0' });
    assert.deepEqual(
      serveOptions({ port: '0', host: '127.0.0.1', 'tls-cert': 'tls.crt', 'tls-key': 'tls.key' }),
      {
        port: 0,
        host: '127.0.0.1',
        tls: { certFile: 'tls.crt', keyFile: 'tls.key' },
      },
    );
    refuses(() => serveOptions({ 'tls-cert': 'tls.crt' }), '--tls-cert and --tls-key go together');
    refuses(() => serveOptions({ port: 'http' }), '--port expects a whole number, got "http"');
  });
});
