import assert from 'node:assert/strict';
import test from 'node:test';
import { createLogger } from '../logging.ts';
import { reachabilityLog } from './reachability.ts';

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

test('an outage is said once, however many requests fail, and its end once, with its length', () => {
  const { logger, messages } = recorded();
  let now = 1000;
  const observe = reachabilityLog(logger, () => now);
  observe('GET', '/api/v1/pods', 200);
  for (let attempt = 0; attempt < 20; attempt++) observe('GET', `/watch/${attempt}`, undefined, refused);
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
  now += 2500;
  withFields('GET', '/x', 503);
  assert.match(JSON.parse(lines[0] as string).err, /ECONNREFUSED/);
  assert.equal(JSON.parse(lines[1] as string).unreachableSeconds, 2.5);
});

test('any answer, an error status too, shows the API reachable; requests the gateway aborted show nothing', () => {
  const { logger, messages } = recorded();
  const observe = reachabilityLog(logger);
  observe('GET', '/x', 500);
  observe('GET', '/x', 429);
  observe('GET', '/x', undefined, new DOMException('stopping', 'AbortError'));
  assert.deepEqual(messages(), []);
});
