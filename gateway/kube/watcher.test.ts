/** A watch that falls silent: how long it is given, and what happens then. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../logging.ts';
import { settingsWith } from '../settings.ts';
import type { KubeClient, RequestInit } from './client.ts';
import { silenceMs, Watcher } from './watcher.ts';

const WATCHING = settingsWith().watching;

describe('silenceMs', () => {
  it("is the bookmark interval and a margin once the server sends bookmarks, the watch's whole length and a minute before", () => {
    assert.equal(silenceMs(WATCHING, true), 75_000, 'a bookmark a minute, and 15 s');
    assert.equal(silenceMs(WATCHING, false), (300 + 60) * 1000);
    assert.equal(
      silenceMs({ ...WATCHING, watchSeconds: 20 }, true),
      35_000,
      'a watch of 20 s has its bookmark 2 s before its end: its length, and 15 s',
    );
  });
});

/** The stream of a watch: these lines, then nothing until it is aborted. */
async function* silentAfter(lines: string[], signal: AbortSignal): AsyncGenerator<Buffer> {
  for (const line of lines) yield Buffer.from(`${line}\n`);
  await new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason));
  });
}

/** Lets what the fake client's promises started run its course: nothing here waits on I/O. */
const settled = () => new Promise((resolve) => setImmediate(resolve));

/** A watcher of KopfExamples on `client` that logs only errors, its reconnect backoff from `firstDelayMs` to 30 s. */
function quietWatcher(client: KubeClient, firstDelayMs: number): Watcher {
  return new Watcher({
    client,
    path: '/apis/kopf.dev/v1/kopfexamples',
    logger: createLogger({ level: 'error' }),
    onEvent: () => {},
    settings: { ...WATCHING, retryDelayMs: { first: firstDelayMs, max: 30_000 } },
  });
}

describe('Watcher', () => {
  it('drops a watch silent for the bookmark bound, says so, and watches again from the last bookmark', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
    const opened: string[] = [];
    const client = {
      request: async () => ({ metadata: { resourceVersion: '1' }, items: [] }),
      stream: async (_path: string, init: RequestInit) => {
        opened.push(String(init.query?.resourceVersion));
        const bookmark = { type: 'BOOKMARK', object: { metadata: { resourceVersion: `${opened.length}0` } } };
        return silentAfter([JSON.stringify(bookmark)], init.signal as AbortSignal);
      },
    } as unknown as KubeClient;
    const lines: string[] = [];
    let restarts = 0;
    const watcher = new Watcher({
      client,
      path: '/apis/kopf.dev/v1/kopfexamples',
      logger: createLogger({ level: 'debug', format: 'json', sink: { write: (line) => lines.push(line) } }),
      onEvent: () => {},
      onRestart: () => restarts++,
      settings: WATCHING,
    });

    watcher.start();
    await settled(); // listed, watching, the bookmark read
    t.mock.timers.tick(silenceMs(WATCHING, true) - 1);
    await settled();
    assert.deepEqual(opened, ['1'], 'not dropped before the bound');
    t.mock.timers.tick(1);
    await settled();
    assert.deepEqual(opened, ['1', '10'], 'from the bookmark’s resourceVersion');
    const warnings = lines.filter((line) => /"level":"warning"/.test(line));
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] as string, /watch silent, dropped it/);
    assert.match(warnings[0] as string, /"silentSeconds":75/);
    assert.equal(restarts, 1);
    await watcher.stop();
  });

  it('reopens a watch that broke after it opened as promptly the sixth time as the first: the API answered it', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
    const first = 250;
    let opened = 0;
    const client = {
      request: async () => ({ metadata: { resourceVersion: '1' }, items: [] }),
      // Opens, then the connection breaks: as when the apiserver is killed under an open watch.
      stream: async () => {
        opened++;
        return (async function* () {
          yield Buffer.from('');
          throw new Error('other side closed');
        })();
      },
      // Not back before the watch's own backoff is over.
      whenBack: (over: AbortSignal) =>
        new Promise<void>((resolve) => over.addEventListener('abort', () => resolve())),
    } as unknown as KubeClient;
    const watcher = quietWatcher(client, first);

    watcher.start();
    await settled();
    assert.equal(opened, 1);
    for (let broken = 1; broken <= 6; broken++) {
      // The jittered first delay is under 1.5 times it; the doubled ones would outgrow that by the third.
      t.mock.timers.tick(first * 1.5);
      await settled();
      assert.equal(opened, broken + 1, `reopened within ${first * 1.5} ms after break ${broken}`);
    }
    await watcher.stop();
  });

  it('opens again as soon as the API answers after it answered nothing, not at the end of its grown backoff', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
    let listed = 0;
    /** What waits for the API's next answer. */
    const waiting = new Set<() => void>();
    const client = {
      request: async () => {
        listed++;
        throw refused;
      },
      whenBack: (over: AbortSignal) =>
        new Promise<void>((resolve) => {
          waiting.add(resolve);
          over.addEventListener('abort', () => resolve());
        }),
    } as unknown as KubeClient;
    const watcher = quietWatcher(client, 250);
    watcher.start();
    await settled();
    // Refused again and again: the backoff grows to 250 ms × 2^7 = 32 s, capped at 30 s.
    for (let tries = 1; tries <= 8; tries++) {
      t.mock.timers.tick(30_000 * 1.5);
      await settled();
    }
    assert.equal(listed, 9);
    for (const answered of waiting) answered();
    waiting.clear();
    await settled();
    assert.equal(listed, 10, 'listed again at once');
    // And from the first delay on: refused again, it is tried again within 1.5 times it.
    t.mock.timers.tick(250 * 1.5);
    await settled();
    assert.equal(listed, 11);
    await watcher.stop();
  });
});
