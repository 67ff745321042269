import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { createLogger } from '../logging.ts';
import type { ProbeRound } from '../services/activities.ts';
import { HealthEndpoint, healthOf, livenessAddress, ProbeCache, readinessOf } from './endpoint.ts';

const round = (service: string, results: Record<string, unknown>, failures: string[] = []): ProbeRound => ({
  service,
  results,
  failures,
});

describe('livenessAddress', () => {
  it("reads where to listen from Kopf's form of URL, plain HTTP only", () => {
    assert.deepEqual(livenessAddress('http://0.0.0.0:8080/healthz'), {
      host: '0.0.0.0',
      port: 8080,
      path: '/healthz',
    });
    assert.deepEqual(livenessAddress('http://[::1]/'), { host: '::1', port: 80, path: '/' });
    assert.throws(() => livenessAddress('https://0.0.0.0:8080/healthz'), /served over plain HTTP/);
    assert.throws(
      () => livenessAddress(':8080/healthz'),
      /must be a URL such as http:\/\/0.0.0.0:8080\/healthz/,
    );
    assert.throws(() => livenessAddress('http://0.0.0.0:8080/readyz'), /where readiness is answered/);
  });
});

const fine = { stopping: false, down: {}, refused: {}, faults: [] };

describe('healthOf', () => {
  it('answers the probes by id, by service and id where two services share one', () => {
    assert.deepEqual(healthOf([round('a', { now: 1, tasks: 2 }), round('b', { tasks: 3 })], fine), {
      status: 200,
      body: { now: 1, 'a/tasks': 2, 'b/tasks': 3 },
    });
    assert.deepEqual(healthOf([], fine), { status: 200, body: {} });
  });

  it("shows a number, a boolean or null as it is, and any other result, which may hold the service's text, as ok", () => {
    const results = {
      count: 3,
      up: true,
      none: null,
      said: 'the gateway is compromised',
      nested: { text: 'x' },
    };
    assert.deepEqual(healthOf([round('a', results)], fine).body, {
      count: 3,
      up: true,
      none: null,
      said: 'ok',
      nested: 'ok',
    });
    const own = { ...round('a', { said: 'fine' }), inProcess: true as const };
    assert.deepEqual(healthOf([own], fine).body, { said: 'fine' }, "an operator in the gateway's process");
  });

  it('answers 500 with every reason: stopping, a fault, a probe failed', () => {
    assert.deepEqual(
      healthOf([round('a', { now: 1 }, ['probe "x" of "a" failed: busy'])], {
        ...fine,
        stopping: true,
        faults: ['the admission webhook server is not serving'],
      }),
      {
        status: 500,
        body: {
          error:
            'the gateway is stopping; the admission webhook server is not serving; probe "x" of "a" failed: busy',
        },
      },
    );
  });

  it('reports the function services down, without failing for them', () => {
    const down = { b: 'connect ECONNREFUSED 127.0.0.1:8080' };
    assert.deepEqual(healthOf([round('a', { now: 1 }), round('b', {})], { ...fine, down }), {
      status: 200,
      body: { now: 1, functionServicesDown: down },
    });
    assert.deepEqual(healthOf([round('a', {}, ['probe "x" of "a" failed: busy'])], { ...fine, down }).body, {
      error: 'probe "x" of "a" failed: busy',
      functionServicesDown: down,
    });
  });
});

describe('readinessOf', () => {
  const ready = { stopping: false, down: {}, refused: {}, notReady: [] };

  it('answers 200 while nothing keeps the gateway from serving', () => {
    assert.deepEqual(readinessOf(ready), { status: 200, body: { ready: true } });
  });

  it('answers 503 with every reason: stopping, what is not ready', () => {
    assert.deepEqual(
      readinessOf({ ...ready, stopping: true, notReady: ['the watched resources are not listed yet'] }),
      {
        status: 503,
        body: { error: 'the gateway is stopping; the watched resources are not listed yet' },
      },
    );
  });

  it('stays ready with a function service down, and reports it', () => {
    const down = { b: 'connect ECONNREFUSED 127.0.0.1:8080' };
    assert.deepEqual(readinessOf({ ...ready, down }), {
      status: 200,
      body: { ready: true, functionServicesDown: down },
    });
  });

  it('stays ready for the others with a function service refused, and names it and why', () => {
    const refused = { greedy: 'handler "steal" of "greedy" names secrets, outside the scope pinned for it' };
    assert.deepEqual(readinessOf({ ...ready, refused }), {
      status: 200,
      body: { ready: true, functionServicesRefused: refused },
    });
    assert.deepEqual(healthOf([], { ...fine, refused }), {
      status: 200,
      body: { functionServicesRefused: refused },
    });
  });
});

describe('ProbeCache', () => {
  it('runs the probes once per period, however many ask, and again once a round could not be had', async () => {
    let now = 0;
    let runs = 0;
    let fail = false;
    const cache = new ProbeCache(
      async () => {
        runs++;
        if (fail) throw new Error('unreachable');
        return [round('a', { run: runs })];
      },
      10_000,
      () => now,
    );
    const [first, second] = await Promise.all([cache.get(), cache.get()]);
    assert.equal(first, second);
    assert.equal(runs, 1);
    now = 9_999;
    assert.deepEqual((await cache.get())[0]?.results, { run: 1 });
    now = 10_000;
    assert.deepEqual((await cache.get())[0]?.results, { run: 2 });
    fail = true;
    now = 20_000;
    await assert.rejects(cache.get(), /unreachable/);
    fail = false;
    assert.deepEqual((await cache.get())[0]?.results, { run: 4 }, 'not kept: asked again at once');
  });
});

describe('HealthEndpoint', () => {
  async function endpoint(
    t: TestContext,
    options: {
      rounds: () => ProbeRound[];
      down?: () => Record<string, string>;
      faults?: () => string[];
      notReady?: () => string[];
    },
  ) {
    const stopping = new AbortController();
    const health = new HealthEndpoint({
      url: 'http://127.0.0.1:0/healthz',
      probe: async () => options.rounds(),
      down: options.down ?? (() => ({})),
      refused: () => ({}),
      faults: options.faults ?? (() => []),
      notReady: options.notReady ?? (() => []),
      stopping: stopping.signal,
      cacheMs: 0,
      logger: createLogger({ sink: { write: () => {} } }),
    });
    await health.start();
    t.after(() => health.stop());
    const get = async (path = '/healthz', method = 'GET') => {
      const response = await fetch(new URL(path, health.url), { method });
      return { status: response.status, body: await response.json() };
    };
    return { health, get, stopping };
  }

  it('answers GET at the liveness path with the health, and nothing else', async (t) => {
    let failures: string[] = [];
    let faults: string[] = [];
    const { health, get, stopping } = await endpoint(t, {
      rounds: () => [round('a', { now: 1 }, failures)],
      faults: () => faults,
    });
    assert.match(health.url, /^http:\/\/127\.0\.0\.1:\d+\/healthz$/);
    assert.deepEqual(await get(), { status: 200, body: { now: 1 } });
    failures = ['probe "now" of "a" failed: busy'];
    assert.deepEqual(await get(), { status: 500, body: { error: 'probe "now" of "a" failed: busy' } });
    failures = [];
    faults = ['the admission webhook server is not serving'];
    assert.deepEqual(await get(), {
      status: 500,
      body: { error: 'the admission webhook server is not serving' },
    });
    assert.deepEqual(await get('/other'), { status: 404, body: { error: 'no route for /other' } });
    assert.equal((await get('/healthz', 'POST')).status, 405);
    stopping.abort();
    assert.deepEqual(await get(), {
      status: 500,
      body: { error: 'the gateway is stopping; the admission webhook server is not serving' },
    });
  });

  it('answers GET at /readyz, on the same port, with the readiness', async (t) => {
    let notReady = ['the watched resources are not listed yet'];
    const { health, get, stopping } = await endpoint(t, {
      // Never asked for readiness: a failing probe leaves the gateway ready.
      rounds: () => [round('a', {}, ['probe "now" of "a" failed: busy'])],
      notReady: () => notReady,
    });
    assert.equal(health.readinessUrl, new URL('/readyz', health.url).href);
    assert.deepEqual(await get('/readyz'), {
      status: 503,
      body: { error: 'the watched resources are not listed yet' },
    });
    notReady = [];
    assert.deepEqual(await get('/readyz'), { status: 200, body: { ready: true } });
    assert.equal((await get('/readyz', 'POST')).status, 405);
    stopping.abort();
    assert.deepEqual(await get('/readyz'), { status: 503, body: { error: 'the gateway is stopping' } });
  });

  it('stays live and ready with a function service down, and names it at both paths', async (t) => {
    const down = { b: 'connect ECONNREFUSED 127.0.0.1:8080' };
    const { get } = await endpoint(t, { rounds: () => [round('a', { now: 1 })], down: () => down });
    assert.deepEqual(await get(), { status: 200, body: { now: 1, functionServicesDown: down } });
    assert.deepEqual(await get('/readyz'), {
      status: 200,
      body: { ready: true, functionServicesDown: down },
    });
  });

  it('stops listening when stopped', async (t) => {
    const { health, get } = await endpoint(t, { rounds: () => [] });
    await get();
    await health.stop();
    await assert.rejects(get(), /fetch failed/);
  });
});
