import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { secretSource } from './secret.ts';

const FROM_OPTION = 'o'.repeat(32);
const FROM_BINDING = 'b'.repeat(32);
const FROM_PROCESS = 'p'.repeat(32);
const FROM_DENO = 'd'.repeat(32);
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** Sets the process environment's secret (or removes it) for one test. */
function processSecret(t: TestContext, value: string | undefined): void {
  const saved = process.env.CAUSEWAY_SECRET;
  if (value === undefined) delete process.env.CAUSEWAY_SECRET;
  else process.env.CAUSEWAY_SECRET = value;
  t.after(() => {
    if (saved === undefined) delete process.env.CAUSEWAY_SECRET;
    else process.env.CAUSEWAY_SECRET = saved;
  });
}

describe('the signing secret', () => {
  it('is the explicit option above all', (t) => {
    processSecret(t, FROM_PROCESS);
    assert.equal(text(secretSource(FROM_OPTION)({ CAUSEWAY_SECRET: FROM_BINDING })), FROM_OPTION);
    assert.equal(text(secretSource(new TextEncoder().encode(FROM_OPTION))(undefined)), FROM_OPTION);
  });

  it('comes from the Workers env binding before the process environment', (t) => {
    processSecret(t, FROM_PROCESS);
    assert.equal(text(secretSource()({ CAUSEWAY_SECRET: FROM_BINDING })), FROM_BINDING);
  });

  it('comes from the process environment when the second fetch argument carries none', (t) => {
    processSecret(t, FROM_PROCESS);
    const source = secretSource();
    // Bun passes its server and Deno its connection info where Workers pass env.
    for (const env of [undefined, {}, { CAUSEWAY_SECRET: '' }, { remoteAddr: { hostname: '::1' } }]) {
      assert.equal(text(source(env)), FROM_PROCESS, JSON.stringify(env));
    }
  });

  it("comes from Deno's environment last", (t) => {
    processSecret(t, undefined);
    const runtime = globalThis as { Deno?: unknown };
    runtime.Deno = { env: { get: (name: string) => (name === 'CAUSEWAY_SECRET' ? FROM_DENO : undefined) } };
    t.after(() => delete runtime.Deno);
    assert.equal(text(secretSource()(undefined)), FROM_DENO);
  });

  it('is required, and checked per request when it comes from the environment', (t) => {
    processSecret(t, undefined);
    const source = secretSource();
    assert.throws(() => source({}), /^Error: no signing secret configured: set CAUSEWAY_SECRET$/);
    assert.throws(() => source({ CAUSEWAY_SECRET: 'short' }), /at least 32 bytes/);
  });
});
