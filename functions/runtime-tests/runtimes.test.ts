/**
 * One behavioural suite, run against the same operator module on each runtime: in-process on Node;
 * bundled for workerd (Cloudflare Workers) inside miniflare, which proves the SDK has no Node-only code
 * and takes its secret from the Workers `env` binding; and served over HTTP by `Bun.serve` and
 * `Deno.serve`, the secret from their environment.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type InvocationBatch, PATHS, PROTOCOL } from '../../protocol/index.ts';
import { type ServerRuntime, startOnRuntime } from '../../test/support/runtimes.ts';
import { startWorker } from '../../test/support/workerd.ts';
import { invocation, SECRET, signed, signedInvoke, signedManifest } from '../test-helpers.ts';
import example from './fixture.ts';

interface Answer {
  status: number;
  json(): Promise<unknown>;
}

interface Runtime {
  fetch(request: Request): Promise<Answer>;
  close(): Promise<void>;
}

const FIXTURE = fileURLToPath(new URL('./fixture.ts', import.meta.url));

const runtimes: Record<string, () => Promise<Runtime>> = {
  async node() {
    return { fetch: (request) => example.fetch(request, { CAUSEWAY_SECRET: SECRET }), close: async () => {} };
  },

  async workerd() {
    return startWorker(FIXTURE, { bindings: { CAUSEWAY_SECRET: SECRET } });
  },

  bun: () => overHttp('bun'),
  deno: () => overHttp('deno'),
};

/** Served by the runtime's own server, its secret from the environment; the suite's requests sent to it. */
async function overHttp(runtime: ServerRuntime): Promise<Runtime> {
  const server = await startOnRuntime(runtime, FIXTURE, { CAUSEWAY_SECRET: SECRET });
  return {
    fetch: (request) => {
      const { pathname, search } = new URL(request.url);
      return fetch(`${server.url}${pathname}${search}`, {
        method: request.method,
        headers: request.headers,
        body: request.body,
        duplex: 'half',
      } as RequestInit);
    },
    close: () => server.close(),
  };
}

for (const [name, start] of Object.entries(runtimes)) {
  describe(`the example operator on ${name}`, () => {
    let runtime: Runtime;
    before(async () => {
      runtime = await start();
    });
    after(() => runtime?.close());

    it('answers the health check unsigned', async () => {
      const response = await runtime.fetch(new Request(`http://functions.test${PATHS.health}`));
      assert.equal(response.status, 200);
      assert.deepEqual(await response.json(), { status: 'ok', protocol: PROTOCOL, name: 'kopfexample' });
    });

    it('publishes its manifest to a signed request', async () => {
      const response = await runtime.fetch(await signedManifest('kopfexample'));
      assert.equal(response.status, 200);
      assert.deepEqual(await response.json(), {
        protocol: PROTOCOL,
        name: 'kopfexample',
        handlers: [
          { id: 'create_fn', kind: 'create', resource: { name: 'kopfexamples' } },
          { id: 'wait_for_children', kind: 'create', resource: { group: 'kopf.dev', name: 'kopfexamples' } },
          {
            id: 'mirror_field/spec.field',
            kind: 'field',
            resource: { name: 'kopfexamples' },
            filters: { labels: { app: { present: true } }, field: 'spec.field' },
          },
        ],
        sessions: true,
        indexVersions: true,
        batches: true,
      });
    });

    it('runs the handlers of a signed invocation', async () => {
      const request = invocation(['create_fn', 'wait_for_children']);
      const response = await runtime.fetch(await signedInvoke('kopfexample', request));
      assert.equal(response.status, 200);
      assert.deepEqual(await response.json(), {
        protocol: PROTOCOL,
        outcomes: {
          create_fn: { status: 'success', result: { message: 'hello kex-1', field: 'value' } },
          wait_for_children: { status: 'temporary', message: 'children are not ready', delay: 10 },
        },
        logs: [{ level: 'info', message: 'creating kex-1', handler: 'create_fn' }],
      });
    });

    it('runs a batch of calls, answered each in order', async () => {
      const first = invocation(['create_fn']);
      const second = {
        ...first,
        body: { ...first.body, metadata: { ...first.body.metadata, name: 'kex-2' } },
      };
      const batch: InvocationBatch = { protocol: PROTOCOL, batch: [first, second] };
      const response = await runtime.fetch(await signedInvoke('kopfexample', batch));
      assert.equal(response.status, 200);
      const answers = ((await response.json()) as { batch: { outcomes: Record<string, unknown> }[] }).batch;
      assert.deepEqual(
        answers.map((answer) => answer.outcomes.create_fn),
        ['kex-1', 'kex-2'].map((name) => ({
          status: 'success',
          result: { message: `hello ${name}`, field: 'value' },
        })),
      );
    });

    it('runs a field handler with memo and patch', async () => {
      const request = invocation(
        ['mirror_field/spec.field'],
        { old: 'before', new: 'value', diff: [['change', [], 'before', 'value']] },
        { reason: 'update', memo: { changes: 2, other: 'kept' } },
      );
      const response = await runtime.fetch(await signedInvoke('kopfexample', request));
      assert.equal(response.status, 200);
      assert.deepEqual(await response.json(), {
        protocol: PROTOCOL,
        outcomes: {
          'mirror_field/spec.field': {
            status: 'success',
            result: { changes: 3 },
            patch: { metadata: { labels: { field: 'value' } } },
          },
        },
        logs: [],
        memo: { changes: 3 },
      });
    });

    const refusals: [string, () => Promise<Request>, RegExp][] = [
      ['an unsigned request', async () => new Request(`http://functions.test${PATHS.manifest}`), /^unsigned/],
      [
        'a tampered body',
        async () => {
          const body = JSON.stringify(invocation(['create_fn']));
          const genuine = await signed({ audience: 'kopfexample', path: PATHS.invoke, body });
          return new Request(genuine, { body: body.replace('kex-1', 'kex-2') });
        },
        /body does not match/,
      ],
      ['a foreign audience', () => signedManifest('another-operator'), /another audience/],
      [
        'a secret other than the binding',
        () => signedManifest('kopfexample', 'x'.repeat(32)),
        /bad signature/,
      ],
    ];
    for (const [what, request, error] of refusals) {
      it(`refuses ${what} with 401`, async () => {
        const response = await runtime.fetch(await request());
        assert.equal(response.status, 401);
        assert.match(((await response.json()) as { error: string }).error, error);
      });
    }

    it('refuses a body over its limit with 413, however it comes', async () => {
      // Over the fixture's 64 KiB: with its length said, and chunked with none. Little enough that the
      // client has sent it all when the answer comes (a server answers early, and then may reset).
      const size = 96 * 1024;
      const said = new Request(`http://functions.test${PATHS.invoke}`, {
        method: 'POST',
        headers: { 'content-length': String(size) },
        body: new Uint8Array(size),
      });
      const chunk = new Uint8Array(16 * 1024);
      let sent = 0;
      const chunked = new Request(await signedInvoke('kopfexample', invocation(['create_fn'])), {
        body: new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent >= size) return controller.close();
            sent += chunk.byteLength;
            controller.enqueue(chunk);
          },
        }),
        duplex: 'half',
      } as RequestInit);
      for (const request of [said, chunked]) {
        const response = await runtime.fetch(request);
        assert.equal(response.status, 413);
        assert.match(((await response.json()) as { error: string }).error, /larger than 65536 bytes/);
      }
    });

    it('refuses a replayed request with 401', async () => {
      const request = await signedManifest('kopfexample');
      const replay = request.clone();
      assert.equal((await runtime.fetch(request)).status, 200);
      assert.equal((await runtime.fetch(replay)).status, 401);
    });
  });
}
