/**
 * `causeway build --target node`: the bundle runs with `node` alone, from a folder with nothing
 * installed, as the function service: its health, a signed call, and `causeway conformance`'s checks.
 * (--target workers: test/e2e/workers.test.ts.)
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runConformance } from '../../gateway/conformance/checks.ts';
import { callHandlers } from '../../testing/index.ts';
import { TEST_SECRET } from '../support/operator.ts';
import { causeway, startCli } from '../support/processes.ts';

const MODULE = fileURLToPath(new URL('../fixtures/lifecycle-operator.ts', import.meta.url));

describe('causeway build --target node', () => {
  let out: string;
  before(async () => {
    out = await mkdtemp(join(tmpdir(), 'causeway-node-build-'));
    const build = causeway(['build', '--target', 'node', MODULE, '--out', out], process.env);
    assert.equal(await build.exited(), 0, build.output());
  });
  after(() => rm(out, { recursive: true, force: true }));

  it('writes one file that node runs as the function service, with nothing installed', async (t) => {
    assert.deepEqual(await readdir(out), ['service.mjs']);

    // Only what an image gives it: no NODE_OPTIONS (the repository's sources hook), no node_modules.
    const service = startCli(
      process.execPath,
      ['service.mjs'],
      { PORT: '0', HOST: '127.0.0.1', CAUSEWAY_SECRET: TEST_SECRET },
      out,
    );
    t.after(() => service.stop('SIGKILL'));
    const [, url] = (await service.waitFor(/function service listening on (http:\/\/\S+)/)) as [
      string,
      string,
    ];

    const health = await fetch(`${url}/healthz`);
    assert.equal(health.status, 200);
    assert.equal(((await health.json()) as { name: string }).name, 'lifecycle');
    const overHttp = {
      fetch: async (request: Request) =>
        fetch(`${url}${new URL(request.url).pathname}`, {
          method: request.method,
          headers: request.headers,
          ...(request.method === 'GET' ? {} : { body: await request.text() }),
        }),
    };
    const response = await callHandlers(overHttp, {
      reason: 'create',
      secret: TEST_SECRET,
      body: {
        apiVersion: 'kopf.dev/v1',
        kind: 'KopfExample',
        metadata: { name: 'kex-1', namespace: 'default', uid: 'uid-1' },
        spec: {},
      },
    });
    assert.deepEqual(response.outcomes, {
      create_fn: {
        status: 'success',
        result: { created: 'kex-1', runtime: `Node.js/${process.versions.node.split('.')[0]}` },
      },
    });
    const conformance = await runConformance({
      url,
      name: 'lifecycle',
      signing: { secret: new TextEncoder().encode(TEST_SECRET) },
    });
    assert.deepEqual(
      conformance.filter((result) => result.failure),
      [],
    );
    assert.equal(await service.stop('SIGTERM'), 0, 'it stops cleanly on SIGTERM');
  });

  it('refuses to start with nothing to verify the calls with', async () => {
    const service = startCli(process.execPath, ['service.mjs'], { PORT: '0' }, out);
    assert.equal(await service.exited(), 1);
    assert.equal(
      service.output(),
      "nothing to verify the gateway's calls with: set CAUSEWAY_JWKS, CAUSEWAY_JWKS_URL or CAUSEWAY_SECRET\n",
    );
  });
});
