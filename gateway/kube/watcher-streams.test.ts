/**
 * The watcher against a fake apiserver that sends generated streams: good events, with unicode, large
 * and nested objects, split into chunks anywhere (mid-line, mid-character), and bad lines among them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { KubernetesObject } from '../../protocol/index.ts';
import { jsonTree, kubeObject, oddSpec } from '../../test/support/arbitraries.ts';
import { createLogger } from '../logging.ts';
import { DEFAULT_SETTINGS } from '../settings.ts';
import type { KubeClient } from './client.ts';
import { type WatchEvent, Watcher } from './watcher.ts';

/** One line of a watch stream: an event of an object, or something an apiserver (or a proxy) garbled. */
type Entry =
  | { good: true; type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: KubernetesObject }
  | { good: false; line: string; kind: 'bad' | 'error' | 'bookmark' };

/** Lines that carry no object the gateway can handle: each is skipped, saying why, and the next is read. */
const badLine = fc.constantFrom(
  '{"type":"ADDED","object":{"kind":"KopfExample"}}',
  '{"type":"MODIFIED","object":{"metadata":{"name":"a"}}}',
  '{"type":"ADDED","object":null}',
  '{"type":"ADDED"}',
  '{"type":"WHATEVER","object":{"metadata":{"uid":"x","resourceVersion":"1"}}}',
  '{"type":',
  'not json',
  '[]',
  'null',
  '"ADDED"',
);

const objects = kubeObject({ spec: fc.oneof({ weight: 10, arbitrary: jsonTree }, oddSpec) });

const entry: fc.Arbitrary<Entry> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      good: fc.constant(true as const),
      type: fc.constantFrom('ADDED', 'MODIFIED', 'DELETED'),
      object: objects,
    }),
  },
  { weight: 2, arbitrary: badLine.map((line) => ({ good: false as const, line, kind: 'bad' as const })) },
  fc.constant({
    good: false as const,
    kind: 'error' as const,
    line: '{"type":"ERROR","object":{"kind":"Status","status":"Failure","message":"etcd leader changed","code":500}}',
  }),
  fc.constant({ good: false as const, kind: 'bookmark' as const, line: '' }),
);

const settings = { ...DEFAULT_SETTINGS.watching, pageSize: 2, retryDelayMs: { first: 1, max: 1 } };

/**
 * An apiserver holding `listed` and then `entries`: a list in pages, and watches from a resourceVersion
 * that send what comes after it, in the chunks `cuts` makes of their bytes; an ERROR is sent once,
 * and ends its watch, as the apiserver's does; the stream then stays open, as a quiet watch does.
 */
function fakeApiserver(listed: unknown[], entries: Entry[], cuts: number[]) {
  const errorsSent = new Set<number>();
  // Good events and bookmarks get increasing resourceVersions, after the list's (100).
  const versions = entries.map((_, index) => String(101 + index));
  const lineOf = (each: Entry, index: number) => {
    if (each.good) {
      const object = {
        ...each.object,
        metadata: { ...each.object.metadata, resourceVersion: versions[index] },
      };
      return JSON.stringify({ type: each.type, object });
    }
    if (each.kind === 'bookmark') {
      return JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: versions[index] } } });
    }
    return each.line;
  };
  const client = {
    async request(_path: string, init: { query: { continue?: string } }) {
      const start = Number(init.query.continue ?? 0);
      const next = start + settings.pageSize;
      return {
        metadata: { resourceVersion: '100', ...(next < listed.length ? { continue: String(next) } : {}) },
        items: listed.slice(start, next),
      };
    },
    async stream(_path: string, init: { query: { resourceVersion: string }; signal: AbortSignal }) {
      const from = versions.indexOf(init.query.resourceVersion) + 1;
      const lines: string[] = [];
      for (let index = from; index < entries.length; index++) {
        const each = entries[index] as Entry;
        if (!each.good && each.kind === 'error') {
          if (errorsSent.has(index)) continue;
          errorsSent.add(index);
          lines.push(each.line);
          break;
        }
        lines.push(lineOf(each, index));
      }
      const ended = lines.at(-1)?.includes('"ERROR"') ?? false;
      const bytes = Buffer.from(lines.map((line) => `${line}\n`).join(''));
      const positions = [...new Set(cuts.map((cut) => Math.floor(cut * bytes.length)))].sort((a, b) => a - b);
      return (async function* () {
        let at = 0;
        for (const position of [...positions, bytes.length]) {
          if (position > at) yield bytes.subarray(at, position);
          at = position;
        }
        if (ended || init.signal.aborted) return;
        await new Promise((resolve) => init.signal.addEventListener('abort', resolve, { once: true }));
      })();
    },
  };
  return { client: client as unknown as KubeClient, lineOf };
}

/** An event as compared: its type, and what of its object a user wrote (the resourceVersion is the fake's). */
const shown = (type: string, { metadata, spec }: KubernetesObject) =>
  `${type} ${metadata.uid} ${JSON.stringify([metadata.name, metadata.labels, metadata.annotations, spec])}`;

/**
 * Runs a watcher on `client` until `count` events are delivered (or 2 s pass, failing with what
 * `context` says), and gives them with the number of its restarts.
 */
async function watched(
  client: KubeClient,
  count: number,
  logger = createLogger({ sink: { write: () => {} } }),
  context = () => '',
) {
  const delivered: WatchEvent[] = [];
  let restarts = 0;
  const { promise: all, resolve } = Promise.withResolvers<void>();
  const watcher = new Watcher({
    client,
    path: '/apis/kopf.dev/v1/kopfexamples',
    settings,
    logger,
    onEvent: (event) => {
      delivered.push(event);
      if (delivered.length === count) resolve();
    },
    onRestart: () => restarts++,
  });
  watcher.start();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`delivered ${delivered.length} of ${count}; ${context()}`)),
      2000,
    );
  });
  try {
    await Promise.race([all, late]);
  } finally {
    clearTimeout(timer);
    await watcher.stop();
  }
  return { delivered, restarts };
}

// Found by the property below: a listed object without metadata failed every list, so the watch never
// started; a line that is not JSON failed the watch, reopened before that same line; and a character
// split between two chunks was decoded as two replacement characters.
describe('the watcher, given what it cannot read', () => {
  const object = (uid: string, note = 'é'): KubernetesObject => ({
    apiVersion: 'kopf.dev/v1',
    kind: 'KopfExample',
    metadata: { name: uid, uid, annotations: { note } },
  });

  it('skips a listed object without metadata, saying so, and delivers the others', async () => {
    const lines: string[] = [];
    const logger = createLogger({ sink: { write: (line) => void lines.push(line) }, format: 'json' });
    const { client } = fakeApiserver([object('a'), { kind: 'KopfExample' }, object('b')], [], []);
    const { delivered } = await watched(client, 2, logger);
    assert.deepEqual(
      delivered.map((event) => event.object.metadata.uid),
      ['a', 'b'],
    );
    assert.match(
      lines.join(''),
      /skipped an event the watch sent: listed object without metadata.uid and metadata.name/,
    );
  });

  it('skips a line that is not JSON and reads on', async () => {
    const entries: Entry[] = [
      { good: false, kind: 'bad', line: 'not json' },
      { good: true, type: 'ADDED', object: object('a') },
    ];
    const { delivered } = await watched(fakeApiserver([], entries, []).client, 1);
    assert.deepEqual(
      delivered.map((event) => event.object.metadata.uid),
      ['a'],
    );
  });

  it('decodes a character split between two chunks whole', async () => {
    const entries: Entry[] = [{ good: true, type: 'ADDED', object: object('a', 'é'.repeat(100)) }];
    const bytes = Buffer.from(`${fakeApiserver([], entries, []).lineOf(entries[0] as Entry, 0)}\n`);
    // Inside the two bytes of the first é: cuts are fractions of the stream's length.
    const cut = (bytes.indexOf(Buffer.from('é')) + 1.5) / bytes.length;
    const { delivered } = await watched(fakeApiserver([], entries, [cut]).client, 1);
    assert.equal(delivered[0]?.object.metadata.annotations?.note, 'é'.repeat(100));
  });
});

describe('the watcher, fed generated streams (property-based)', () => {
  const warnings: string[] = [];
  const logger = createLogger({
    sink: { write: (line) => void warnings.push(line) },
    level: 'warning',
    format: 'json',
  });

  it('delivers every good event in order, whatever surrounds it, and restarts only for an ERROR', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            { weight: 4, arbitrary: objects },
            fc.constantFrom({ kind: 'KopfExample' }, { metadata: null }, 'x'),
          ),
          { maxLength: 5 },
        ),
        fc.array(entry, { maxLength: 8 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 }),
        kubeObject({ spec: jsonTree }),
        async (listed, generated, cuts, last) => {
          // A good event last: every ERROR before it has been read once it is delivered.
          const entries: Entry[] = [...generated, { good: true, type: 'MODIFIED', object: last }];
          const { client } = fakeApiserver(listed, entries, cuts);
          const good = listed.filter(
            (item): item is KubernetesObject =>
              typeof item === 'object' &&
              item !== null &&
              'metadata' in item &&
              item.metadata !== null &&
              'uid' in (item.metadata as object),
          );
          const expected = [
            ...good.map((object) => shown('ADDED', object)),
            ...entries.flatMap((each) => (each.good ? [shown(each.type, each.object)] : [])),
          ];
          warnings.length = 0;
          const { delivered, restarts } = await watched(client, expected.length, logger, () =>
            warnings.join(''),
          );
          assert.deepEqual(
            delivered.map(({ type, object }) => shown(type, object)),
            expected,
          );
          assert.equal(restarts, entries.filter((each) => !each.good && each.kind === 'error').length);
        },
      ),
      // A failing case waits out its deadline: shrinking through many of them would take minutes.
      { numRuns: 1000, endOnFailure: true },
    );
  });
});
