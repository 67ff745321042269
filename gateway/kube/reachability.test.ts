import assert from 'node:assert/strict';
import test from 'node:test';
import { createLogger } from '../logging.ts';
import { ApiError, SilentConnection } from './errors.ts';
import {
  ApiComeback,
  ApiUnreachable,
  COMEBACK_PROBE_MS,
  foundNoAnswer,
  reachabilityLog,
  UNANSWERED_MS,
  waitsForComeback,
  watchFailureLevel,
} from './reachability.ts';

function recorded() {
  const lines: string[] = [];
  const logger = createLogger({
    level: 'debug',
    format: 'json',
    sink: { write: (line) => lines.push(line) },
  });
  return { logger, messages: () => lines.map((line) => JSON.parse(line).msg as string) };
}

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });

test('an outage is said once it has lasted, however many requests fail, and its end once, with its length', () => {
  const { logger, messages } = recorded();
  let now = 1000;
  const observe = reachabilityLog(logger, () => now);
  observe('GET', '/api/v1/pods', 200);
  for (let attempt = 0; attempt < 20; attempt++) {
    observe('GET', `/watch/${attempt}`, undefined, refused);
    now += 100;
  }
  now = 6500;
  observe('PATCH', '/apis/kopf.dev/v1/x', 200);
  observe('GET', '/api/v1/pods', 200);
  assert.deepEqual(messages(), [
    'Kubernetes API unreachable: watches and writes retry until it answers',
    'Kubernetes API reachable again',
  ]);
  const lines: string[] = [];
  const withFields = reachabilityLog(
    createLogger({ format: 'json', sink: { write: (line) => lines.push(line) } }),
    () => now,
  );
  withFields('GET', '/x', undefined, refused);
  now += UNANSWERED_MS;
  withFields('GET', '/x', undefined, refused);
  now += 1500;
  withFields('GET', '/x', 503);
  assert.match(JSON.parse(lines[0] as string).err, /ECONNREFUSED/);
  assert.equal(JSON.parse(lines[1] as string).unreachableSeconds, 2.5);
});

test('a broken connection whose requests are answered when tried again is no outage', () => {
  const { logger, messages } = recorded();
  let now = 1000;
  const observe = reachabilityLog(logger, () => now);
  for (let request = 0; request < 10; request++) observe('GET', '/x', undefined, refused);
  now += 250;
  observe('GET', '/x', 200);
  now += UNANSWERED_MS;
  observe('GET', '/x', undefined, refused);
  assert.deepEqual(messages(), []);
});

test("a connection found silent is the liveness check's to say", () => {
  const { logger, messages } = recorded();
  let now = 1000;
  const observe = reachabilityLog(logger, () => now);
  for (let request = 0; request < 5; request++) {
    observe('GET', '/x', undefined, new SilentConnection('no PING answered'));
    now += UNANSWERED_MS;
  }
  assert.deepEqual(messages(), []);
});

test('any answer, an error status too, shows the API reachable; requests the gateway aborted show nothing', () => {
  const { logger, messages } = recorded();
  const observe = reachabilityLog(logger);
  observe('GET', '/x', 500);
  observe('GET', '/x', 429);
  observe('GET', '/x', undefined, new DOMException('stopping', 'AbortError'));
  assert.deepEqual(messages(), []);
});

const starting = new ApiError('GET', '/apis/x', 503, { kind: 'Status', reason: 'ServiceUnavailable' });
const forbidden = new ApiError('GET', '/apis/x', 403, { kind: 'Status', reason: 'Forbidden' });

test('a watch finding no API to answer leaves saying so to the log of reachability', () => {
  for (const failures of [1, 2, 3, 10]) assert.equal(watchFailureLevel(refused, failures), 'debug');
});

test('a transient answer is a warning once it has lasted five tries, and only then', () => {
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6, 7].map((failures) => watchFailureLevel(starting, failures)),
    ['debug', 'debug', 'debug', 'debug', 'warning', 'debug', 'debug'],
  );
});

test('an answer that refuses the watch is a warning every time', () => {
  for (const failures of [1, 2, 3, 10]) assert.equal(watchFailureLevel(forbidden, failures), 'warning');
});

test('a request found no one to answer when it got no answer and the gateway did not give it up', () => {
  assert.equal(foundNoAnswer(refused), true);
  assert.equal(foundNoAnswer(starting), false, 'a 503 is an answer');
  assert.equal(foundNoAnswer(new DOMException('stopping', 'AbortError')), false);
  const unreachable = new ApiUnreachable(refused);
  assert.equal(unreachable.message, 'the Kubernetes API is unreachable: connect ECONNREFUSED 127.0.0.1:6443');
  assert.equal(unreachable.cause, refused);
});

test('what found no one to answer waits for the API to come back, and so does a 503 right after; a 429 never', () => {
  const notReady = new ApiError('GET', '/apis/kopf.dev/v1/kopfexamples', 503, {}, 5);
  const throttled = new ApiError('GET', '/apis/kopf.dev/v1/kopfexamples', 429, {}, 1);
  assert.equal(waitsForComeback(refused, false), true);
  assert.equal(
    waitsForComeback(notReady, true),
    true,
    'a starting apiserver: /readyz ends its Retry-After sooner',
  );
  assert.equal(waitsForComeback(notReady, false), false, 'an API that answers: its backoff in full');
  assert.equal(waitsForComeback(throttled, true), false);
  assert.equal(waitsForComeback(new SilentConnection('silent'), false), true);
});

test('while anything waits, the readiness is asked about once a second, its first answer not transient releases every wait, and no probe once nothing waits', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const settled = () => new Promise((resolve) => setImmediate(resolve));
  // No one, then a starting apiserver: throttled while its storage initialises, not ready, then refused
  // (it is there: a gateway that may not read /readyz still learns it).
  const answers: Array<number | undefined> = [undefined, 429, 503, 500, 403];
  let probes = 0;
  const comeback = new ApiComeback(async () => {
    probes++;
    return answers.shift();
  });
  let released = 0;
  const waits = [comeback.wait(), comeback.wait()].map((wait) => wait.then(() => released++));
  // Each probe within 1.5 times the interval after the one before (it is jittered).
  for (let probe = 1; probe <= 5; probe++) {
    assert.equal(released, 0);
    t.mock.timers.tick(COMEBACK_PROBE_MS * 1.5);
    await settled();
    assert.equal(probes, probe);
  }
  await Promise.all(waits);
  assert.equal(released, 2);

  const stop = new AbortController();
  const abandoned = comeback.wait(stop.signal);
  t.mock.timers.tick(COMEBACK_PROBE_MS * 1.5);
  await settled();
  assert.equal(probes, 6, 'probing again for a new wait');
  stop.abort();
  await abandoned;
  t.mock.timers.tick(COMEBACK_PROBE_MS * 10);
  await settled();
  assert.equal(probes, 6, 'nothing waits: no probe');
});
