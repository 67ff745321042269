import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { keySource } from './keys.ts';

const FROM_OPTION = 'o'.repeat(32);
const FROM_BINDING = 'b'.repeat(32);
const FROM_PROCESS = 'p'.repeat(32);
const FROM_DENO = 'd'.repeat(32);
const VARIABLES = ['CAUSEWAY_SECRET', 'CAUSEWAY_JWKS', 'CAUSEWAY_JWKS_URL'];
const text = (keys: unknown) => new TextDecoder().decode(keys as Uint8Array);

const { publicKey, privateKey } = generateKeyPairSync('ed25519');
const PUBLIC = { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'one', alg: 'EdDSA' }] };
const PRIVATE = { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'one' }] };

/** The process environment as given for one test: the keys variables not given are unset. */
function environment(t: TestContext, values: Record<string, string> = {}): void {
  const saved = Object.fromEntries(VARIABLES.map((name) => [name, process.env[name]]));
  for (const name of VARIABLES) {
    if (name in values) process.env[name] = values[name];
    else delete process.env[name];
  }
  t.after(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
}

describe('what a function service verifies with', () => {
  it('is the explicit option above all', (t) => {
    environment(t, { CAUSEWAY_SECRET: FROM_PROCESS });
    assert.equal(text(keySource({ secret: FROM_OPTION })({ CAUSEWAY_SECRET: FROM_BINDING })), FROM_OPTION);
    assert.equal(text(keySource({ secret: new TextEncoder().encode(FROM_OPTION) })(undefined)), FROM_OPTION);
    assert.deepEqual(keySource({ keys: PUBLIC })({ CAUSEWAY_SECRET: FROM_BINDING }), PUBLIC);
    const url = keySource({ keys: new URL('https://keys.example/jwks.json') })(undefined);
    assert.equal(String(url), 'https://keys.example/jwks.json');
  });

  it('is public keys or a secret, not both, and checked at once when given', () => {
    assert.throws(() => keySource({ keys: PUBLIC, secret: FROM_OPTION }), /not both/);
    assert.throws(() => keySource({ secret: 'short' }), /at least 32 bytes/);
    assert.throws(
      () => keySource({ keys: PRIVATE }),
      /"one" is a private key: give function services the public keys only/,
    );
    assert.throws(() => keySource({ keys: new URL('http://keys.example/jwks.json') }), /must be https/);
  });

  it('comes from the Workers env binding before the process environment', (t) => {
    environment(t, { CAUSEWAY_SECRET: FROM_PROCESS });
    assert.equal(text(keySource()({ CAUSEWAY_SECRET: FROM_BINDING })), FROM_BINDING);
  });

  it("takes the gateway's public keys before a URL, and a URL before a secret", (t) => {
    environment(t, {
      CAUSEWAY_SECRET: FROM_PROCESS,
      CAUSEWAY_JWKS_URL: 'http://127.0.0.1:9/jwks.json',
      CAUSEWAY_JWKS: JSON.stringify(PUBLIC),
    });
    const source = keySource();
    assert.deepEqual(source(undefined), PUBLIC);
    assert.equal(source(undefined), source(undefined), 'parsed once while the text is the same');
    delete process.env.CAUSEWAY_JWKS;
    assert.equal(String(source(undefined)), 'http://127.0.0.1:9/jwks.json');
    delete process.env.CAUSEWAY_JWKS_URL;
    assert.equal(text(source(undefined)), FROM_PROCESS);
  });

  it('follows the environment when the keys in it change (a re-read key file)', (t) => {
    environment(t, { CAUSEWAY_JWKS: JSON.stringify(PUBLIC) });
    const source = keySource();
    assert.deepEqual(source(undefined), PUBLIC);
    const rotated = { keys: [...PUBLIC.keys, { ...PUBLIC.keys[0], kid: 'two' }] };
    process.env.CAUSEWAY_JWKS = JSON.stringify(rotated);
    assert.deepEqual(source(undefined), rotated);
  });

  it('comes from the process environment when the second fetch argument carries none', (t) => {
    environment(t, { CAUSEWAY_SECRET: FROM_PROCESS });
    const source = keySource();
    // Bun passes its server and Deno its connection info where Workers pass env.
    for (const env of [undefined, {}, { CAUSEWAY_SECRET: '' }, { remoteAddr: { hostname: '::1' } }]) {
      assert.equal(text(source(env)), FROM_PROCESS, JSON.stringify(env));
    }
  });

  it("comes from Deno's environment last", (t) => {
    environment(t);
    const runtime = globalThis as { Deno?: unknown };
    runtime.Deno = { env: { get: (name: string) => (name === 'CAUSEWAY_SECRET' ? FROM_DENO : undefined) } };
    t.after(() => delete runtime.Deno);
    assert.equal(text(keySource()(undefined)), FROM_DENO);
  });

  it('is required, and checked per request when it comes from the environment', (t) => {
    environment(t);
    const source = keySource();
    assert.throws(
      () => source({}),
      /^Error: no keys to verify requests with: set CAUSEWAY_JWKS \(the gateway's public keys\), CAUSEWAY_JWKS_URL or CAUSEWAY_SECRET$/,
    );
    assert.throws(() => source({ CAUSEWAY_SECRET: 'short' }), /at least 32 bytes/);
    assert.throws(
      () => source({ CAUSEWAY_JWKS: '{"keys": []}' }),
      /CAUSEWAY_JWKS: the gateway's public keys are not a JWKS/,
    );
    assert.throws(
      () => source({ CAUSEWAY_JWKS: 'nope' }),
      /CAUSEWAY_JWKS: the gateway's public keys are not JSON/,
    );
    assert.throws(() => source({ CAUSEWAY_JWKS_URL: 'nope' }), /CAUSEWAY_JWKS_URL is not a URL/);
  });
});
