/**
 * The conformance runner against function services of causeway/functions: the SDK passes every check,
 * and a service that gets something wrong fails the check that says what.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { AdmissionError, type OperatorOptions, operator } from '../../functions/index.ts';
import { serveFetch } from '../cli/commands/serve/serve.ts';
import { newKey, publicKeys, signingKeyOf } from '../dispatch/keys.ts';
import type { FetchHandler } from '../dispatch/transport.ts';
import { runConformance } from './checks.ts';

const SECRET = 'the secret of the conformance tests, 32+ bytes';

const signing = { secret: new TextEncoder().encode(SECRET) };

function everyKind(keys: OperatorOptions['keys'] = undefined) {
  const op = operator({ name: 'every-kind', ...(keys ? { keys } : { secret: SECRET }) });
  op.on.create('widgets.example.com', function create_fn({ name }) {
    return { created: name };
  });
  op.on.update('widgets.example.com', function update_fn() {});
  op.on.delete('widgets.example.com', function delete_fn() {});
  op.on.resume('widgets.example.com', function resume_fn() {});
  op.on.field('widgets.example.com', 'spec.size', function size_fn() {});
  op.on.event('widgets.example.com', function event_fn() {});
  op.on.reconcile('widgets.example.com', function reconcile_fn() {});
  op.on.validate('widgets.example.com', function validate_fn({ spec }) {
    if (spec.bad) throw new AdmissionError('bad');
  });
  op.on.mutate('widgets.example.com', function mutate_fn({ patch }) {
    patch.metadata = { labels: { mutated: 'yes' } };
  });
  return op;
}

async function serve(t: TestContext, handler: FetchHandler): Promise<string> {
  const server = await serveFetch(handler, { port: 0, host: '127.0.0.1' });
  t.after(() => server.close());
  return server.url;
}

describe('causeway conformance', () => {
  it('passes the SDK on every check, one invocation per handler kind', async (t) => {
    const url = await serve(t, everyKind());
    const results = await runConformance({ url, name: 'every-kind', signing });
    assert.deepEqual(
      results.filter((result) => result.failure),
      [],
    );
    assert.equal(results.filter((result) => result.name.startsWith('invoke:')).length, 9);
    assert.equal(results.filter((result) => result.name.startsWith('refuses')).length, 12);
    assert.ok(
      results.some((result) => result.name.startsWith('batches: 9 calls in one request')),
      'every handler in one batch',
    );
  });

  it('fails a service that says it takes batches but answers one for the first call only', async (t) => {
    const op = everyKind();
    const url = await serve(t, {
      fetch: async (request) => {
        const response = await op.fetch(request);
        const answer = (await response
          .clone()
          .json()
          .catch(() => undefined)) as { batch?: unknown[] } | undefined;
        if (!answer?.batch) return response;
        return Response.json({ protocol: 'causeway.dev/v1', batch: answer.batch.slice(0, 1) });
      },
    });
    const failed = (await runConformance({ url, name: 'every-kind', signing })).filter(
      (result) => result.failure,
    );
    assert.equal(failed.length, 1);
    assert.match(failed[0]?.name ?? '', /^batches: /);
    assert.match(failed[0]?.failure ?? '', /batch response must hold 9 responses/);
  });

  it('passes the SDK keeping indexes: named by a version it never got, sent whole, then by version', async (t) => {
    const op = operator({ name: 'indexed', secret: SECRET });
    op.index('widgets.example.com', function names({ name }) {
      return name;
    });
    const seen: unknown[] = [];
    op.on.create('widgets.example.com', { indexes: ['names'] }, function reads({ indexes }) {
      seen.push([...(indexes.names ?? [])]);
    });
    const results = await runConformance({ url: await serve(t, op), name: 'indexed', signing });
    assert.deepEqual(
      results.filter((result) => result.failure),
      [],
    );
    assert.ok(results.some((result) => result.name.startsWith('indexes: "reads"')));
    // The round trip without indexes, then the call with the index whole, then by its version; then
    // in a batch, without indexes.
    assert.deepEqual(seen, [[], [['conformance', ['a']]], [['conformance', ['a']]], []]);
  });

  it('passes the SDK with activities, calling its probes and never its startup, cleanup or login', async (t) => {
    const op = operator({ name: 'activities', secret: SECRET });
    const called: string[] = [];
    op.on.startup(function starts() {
      called.push('startup');
    });
    op.on.cleanup(function cleans() {
      called.push('cleanup');
    });
    op.on.login(function logs_in() {
      called.push('login');
      return { server: 'https://10.0.0.1:6443', token: 't' };
    });
    op.on.probe(function answers() {
      called.push('probe');
      return 'fine';
    });
    const results = await runConformance({ url: await serve(t, op), name: 'activities', signing });
    assert.deepEqual(
      results.filter((result) => result.failure),
      [],
    );
    assert.deepEqual(
      results.filter((result) => result.name.startsWith('invoke:')).map((result) => result.name),
      ['invoke: probe "answers" (an activity, about no object) answers a valid outcome'],
    );
    assert.deepEqual(called, ['probe']);
  });

  it("passes the SDK verifying with the gateway's public keys, in sessions too, algorithm confusion refused", async (t) => {
    const stored = newKey(Date.now());
    const url = await serve(t, everyKind(publicKeys([stored])));
    const results = await runConformance({ url, name: 'every-kind', signing: { key: signingKeyOf(stored) } });
    assert.deepEqual(
      results.filter((result) => result.failure),
      [],
    );
    assert.ok(
      results.some(
        (result) =>
          result.name === 'refuses a request signed with HS256 over the public key with 401 and the reason',
      ),
    );
    assert.ok(
      results.some((result) => result.name === 'sessions: a signed GET in a session answers the manifest'),
    );
    // 13 for calls signed on their own, 10 for calls in a session (the SDK takes sessions).
    assert.equal(results.filter((result) => result.name.startsWith('refuses')).length, 23);
  });

  it('fails a service that answers as another, or lets a replay through, saying so', async (t) => {
    const op = everyKind();
    let last: string | undefined;
    const replaying: FetchHandler = {
      // Forgets every token but the last: a replay of the last one goes through.
      fetch: async (request) => {
        const token = request.headers.get('authorization');
        if (token && token === last)
          return Response.json({ protocol: 'causeway.dev/v1', name: 'every-kind', handlers: [] });
        last = token ?? undefined;
        return op.fetch(request);
      },
    };
    const url = await serve(t, replaying);
    const failed = (await runConformance({ url, name: 'every-kind', signing })).filter(
      (result) => result.failure,
    );
    assert.deepEqual(
      failed.map((result) => result.name),
      ['refuses a replayed request with 401'],
    );
    assert.match(failed[0]?.failure ?? '', /^status 200, not 401/);

    const misnamed = (await runConformance({ url, name: 'another', signing })).filter(
      (result) => result.failure,
    );
    assert.match(misnamed[0]?.failure ?? '', /it calls itself "every-kind", not "another"/);
  });
});
