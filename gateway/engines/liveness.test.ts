import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { createLogger } from '../logging.ts';
import type { ProbeRound } from './activities.ts';
import { healthOf, LivenessEndpoint, livenessAddress, ProbeCache } from './liveness.ts';

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
  });
});

describe('healthOf', () => {
  it('answers the probes by id, by service and id where two services share one', () => {
    assert.deepEqual(healthOf([round('a', { now: 1, tasks: 2 }), round('b', { tasks: 3 })], [], false), {
      status: 200,
      body: { now: 1, 'a/tasks': 2, 'b/tasks': 3 },
    });
    assert.deepEqual(healthOf([], [], false), { status: 200, body: {} });
  });

  it('answers 500 with every reason: stopping, a service down, a probe failed', () => {
    assert.deepEqual(
      healthOf(
        [round('a', { now: 1 }, ['probe "x" of "a" failed: busy'])],
        ['function service "b" is down: refused'],
        true,
      ),
      {
        status: 500,
        body: {
          error:
            'the gateway is stopping; function service "b" is down: refused; probe "x" of "a" failed: busy',
        },
      },
    );
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

describe('LivenessEndpoint', () => {
  async function endpoint(t: TestContext, options: { rounds: () => ProbeRound[]; down?: string[] }) {
    const stopping = new AbortController();
    const liveness = new LivenessEndpoint({
      url: 'http://127.0.0.1:0/healthz',
      probe: async () => options.rounds(),
      down: () => options.down ?? [],
      stopping: stopping.signal,
      cacheMs: 0,
      logger: createLogger({ sink: { write: () => {} } }),
    });
    await liveness.start();
    t.after(() => liveness.stop());
    const get = async (path = '/healthz', method = 'GET') => {
      const response = await fetch(new URL(path, liveness.url), { method });
      return { status: response.status, body: await response.json() };
    };
    return { liveness, get, stopping };
  }

  it('answers GET at its path with the health, and nothing else', async (t) => {
    let failures: string[] = [];
    const { liveness, get, stopping } = await endpoint(t, {
      rounds: () => [round('a', { now: 'x' }, failures)],
    });
    assert.match(liveness.url, /^http:\/\/127\.0\.0\.1:\d+\/healthz$/);
    assert.deepEqual(await get(), { status: 200, body: { now: 'x' } });
    failures = ['probe "now" of "a" failed: busy'];
    assert.deepEqual(await get(), { status: 500, body: { error: 'probe "now" of "a" failed: busy' } });
    assert.deepEqual(await get('/other'), { status: 404, body: { error: 'no route for /other' } });
    assert.equal((await get('/healthz', 'POST')).status, 405);
    stopping.abort();
    assert.deepEqual(await get(), { status: 500, body: { error: 'the gateway is stopping' } });
  });

  it('stops listening when stopped', async (t) => {
    const { liveness, get } = await endpoint(t, { rounds: () => [] });
    await get();
    await liveness.stop();
    await assert.rejects(get(), /fetch failed/);
  });
});
