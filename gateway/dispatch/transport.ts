/**
 * How the gateway reaches a function service: over HTTP, signed and verified; or, when both live in
 * one process (`causeway run`), through the service's fetch handler, or directly through the calls an
 * operator of causeway/functions offers in-process: no HTTP, JSON or signatures, which guard a
 * network such a call never crosses.
 */
import type { LookupFunction } from 'node:net';
import { Agent, request } from 'undici';
import { IN_PROCESS, type InProcessCalls } from '../../protocol/index.ts';
import { DEFAULT_SETTINGS } from '../settings.ts';
import type { Budget, ServiceBudgets } from './budget.ts';

export interface Exchange {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body: Uint8Array | undefined;
  timeoutMs: number;
  /** Cuts the call off before its deadline. */
  cut?: AbortSignal;
  /**
   * A call that stays open for long (a daemon's): it takes a connection beside the service's capped
   * ones, so that long calls never keep the others waiting.
   */
  long?: boolean;
}

/**
 * A service's answer: its status, its body, and its `Retry-After` header if it sent one. `release`
 * gives back the bytes of the service's budget its body holds: called once the body is read into what
 * the caller keeps (parsed), on every path.
 */
export interface Reply {
  status: number;
  text: string;
  retryAfter?: string;
  release(): void;
}

/** The budgets a transport holds a service's calls to: its calls in flight, the bytes of its replies. */
export type TransportBudgets = Pick<ServiceBudgets, 'calls' | 'replyBytes'>;

export interface Transport {
  /** Where the service is, for messages. */
  readonly url: string;
  send(exchange: Exchange): Promise<Reply>;
  close(): Promise<void>;
  /** An operator in this process: its calls, made directly. */
  readonly direct?: InProcessCalls;
}

/** A fetch handler as `causeway/functions` makes it (`export default op`). */
export interface FetchHandler {
  fetch(request: Request): Promise<Response> | Response;
  readonly [IN_PROCESS]?: InProcessCalls;
}

/** A reply longer than the gateway reads (settings.calls.maxReplyBytes): the rest of it was not read. */
export class ReplyTooLarge extends Error {
  override name = 'ReplyTooLarge';

  constructor(limit: number) {
    super(`over ${bytes(limit)}`);
  }
}

function bytes(count: number): string {
  const mebibytes = count / (1024 * 1024);
  return Number.isInteger(mebibytes) ? `${mebibytes} MiB` : `${count} bytes`;
}

const decoder = new TextDecoder();

/**
 * A reply's body as text, read up to `maxBytes`: a longer one (its declared length, or what arrives)
 * is dropped as soon as it is known to be, and the stream cancelled, so that one service cannot fill the
 * gateway's memory, which every other service's calls need too. Its bytes are taken from the service's
 * budget before they are kept (the declared length at once, or each piece as it arrives): while the
 * service's replies in flight hold the whole budget, the stream is not read, and its sender waits.
 * `held`: what the text holds of the budget; on a failure, nothing is held.
 */
async function readCapped(
  body: (AsyncIterable<Uint8Array> & { destroy(): unknown }) | ReadableStream<Uint8Array> | null,
  declaredLength: string | null | undefined,
  maxBytes: number,
  budget: Budget | undefined,
  signal: AbortSignal,
): Promise<{ text: string; held: number }> {
  if (body === null) return { text: '', held: 0 };
  const declared = declaredLength ? Number(declaredLength) : undefined;
  const cancel = () => {
    if ('destroy' in body) body.destroy();
    else body.cancel().catch(() => {});
  };
  if (declared !== undefined && declared > maxBytes) {
    cancel();
    throw new ReplyTooLarge(maxBytes);
  }
  let held = 0;
  try {
    if (declared !== undefined && Number.isSafeInteger(declared) && budget) {
      await budget.acquire(declared, signal);
      held = declared;
    }
  } catch (error) {
    cancel();
    throw error;
  }
  const chunks = body[Symbol.asyncIterator]();
  // A stream of this process's fetch handler is not cut off by the signal: raced with it.
  const stop = aborted(signal);
  stop.catch(() => {});
  const next = () => Promise.race([chunks.next(), stop]);
  const received: Uint8Array[] = [];
  let size = 0;
  try {
    for (let chunk = await next(); !chunk.done; chunk = await next()) {
      size += chunk.value.byteLength;
      if (size > maxBytes) throw new ReplyTooLarge(maxBytes);
      if (budget && size > held) {
        await budget.acquire(size - held, signal, held);
        held = size;
      }
      received.push(chunk.value);
    }
  } catch (error) {
    budget?.release(held);
    // Cancels the stream (undici destroys the connection); not awaited: a hostile stream may never end.
    chunks.return?.().catch(() => {});
    throw error;
  }
  return { text: decoder.decode(Buffer.concat(received, size)), held };
}

/**
 * `ca`: PEM of what to trust for an https URL, instead of the system's roots. `connections`: at most
 * this many requests at once to the service, one per connection; the rest wait their turn.
 * `maxReplyBytes`: the longest reply it reads. `budgets`: the service's, which its calls (those not
 * `long`) and the bytes of its replies are held to; `connections` is then its calls' limit. `lookup`:
 * how its host's name is resolved, at each connection (refusing addresses a URL may not reach).
 */
export function httpTransport(
  url: string,
  ca?: string,
  connections = 128,
  maxReplyBytes = DEFAULT_SETTINGS.calls.maxReplyBytes,
  { budgets, lookup }: { budgets?: TransportBudgets; lookup?: LookupFunction } = {},
): Transport {
  const base = url.replace(/\/+$/, '');
  const connect = { ...(ca ? { ca } : {}), ...(lookup ? { lookup } : {}) };
  const dispatcher = new Agent({
    keepAliveTimeout: 30_000,
    connections: budgets?.calls.limit ?? connections,
    connect,
  });
  // Made on the first long call: most services have none.
  let longCalls: Agent | undefined;
  return {
    url: base,
    send: ({ method, path, headers, body, timeoutMs, cut, long }) =>
      withDeadline(timeoutMs, cut, async (signal) => {
        if (long) longCalls ??= new Agent({ keepAliveTimeout: 30_000, connect });
        const via = long && longCalls ? longCalls : dispatcher;
        // A long call (a daemon's) is held to the daemons' budget by whoever makes it.
        const calls = long ? undefined : budgets?.calls;
        await calls?.acquire(1, signal);
        try {
          const response = await request(`${base}${path}`, {
            method,
            headers,
            body,
            dispatcher: via,
            signal,
          });
          const retryAfter = response.headers['retry-after'];
          const length = response.headers['content-length'] as string | undefined;
          const read = await readCapped(response.body, length, maxReplyBytes, budgets?.replyBytes, signal);
          return {
            status: response.statusCode,
            text: read.text,
            ...(typeof retryAfter === 'string' ? { retryAfter } : {}),
            release: once(() => budgets?.replyBytes.release(read.held)),
          };
        } finally {
          calls?.release(1);
        }
      }),
    close: async () => {
      await Promise.all([dispatcher.close(), longCalls?.close()]);
    },
  };
}

export function inProcessTransport(
  handler: FetchHandler,
  maxReplyBytes = DEFAULT_SETTINGS.calls.maxReplyBytes,
  budgets?: TransportBudgets,
): Transport {
  const base = 'http://in-process';
  return {
    url: base,
    send: ({ method, path, headers, body, timeoutMs, cut, long }) =>
      withDeadline(timeoutMs, cut, async (signal) => {
        const calls = long ? undefined : budgets?.calls;
        await calls?.acquire(1, signal);
        try {
          const answer = Promise.resolve(
            handler.fetch(new Request(`${base}${path}`, { method, headers, body, signal })),
          );
          const response = await Promise.race([answer, aborted(signal)]);
          const retryAfter = response.headers.get('retry-after');
          const length = response.headers.get('content-length');
          const read = await readCapped(response.body, length, maxReplyBytes, budgets?.replyBytes, signal);
          return {
            status: response.status,
            text: read.text,
            ...(retryAfter ? { retryAfter } : {}),
            release: once(() => budgets?.replyBytes.release(read.held)),
          };
        } finally {
          calls?.release(1);
        }
      }),
    close: async () => {},
    ...(handler[IN_PROCESS] ? { direct: handler[IN_PROCESS] } : {}),
  };
}

/** `give` the first time only: a reply's bytes are given back once, whichever path comes first. */
function once(give: () => void): () => void {
  let given = false;
  return () => {
    if (given) return;
    given = true;
    give();
  };
}

/** Rejects with the signal's reason once it aborts: raced against a call that takes no signal. */
export function aborted(signal: AbortSignal): Promise<never> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<never>((_, reject) =>
    signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
  );
}

/**
 * Runs `call` with a signal that aborts with a TimeoutError after `timeoutMs`, or as `cut` does. Unlike
 * AbortSignal.timeout, the timer goes when the call settles: at hundreds of calls per second, 30-s
 * timers kept every call's signal, request and response alive for 30 s.
 */
export async function withDeadline<T>(
  timeoutMs: number,
  cut: AbortSignal | undefined,
  call: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')),
    timeoutMs,
  );
  const onCut = () => controller.abort(cut?.reason);
  if (cut?.aborted) onCut();
  cut?.addEventListener('abort', onCut, { once: true });
  try {
    return await call(controller.signal);
  } finally {
    clearTimeout(timer);
    cut?.removeEventListener('abort', onCut);
  }
}
