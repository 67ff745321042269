/**
 * How the gateway reaches a function service: over HTTP, or, when both live in one process
 * (`causeway run`), by calling the service's fetch handler directly. Requests are signed and verified
 * the same way on both.
 */
import { Agent, request } from 'undici';

export interface Exchange {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body: Uint8Array | undefined;
  timeoutMs: number;
}

export interface Transport {
  /** Where the service is, for messages. */
  readonly url: string;
  send(exchange: Exchange): Promise<{ status: number; text: string }>;
  close(): Promise<void>;
}

/** A fetch handler as `causeway/functions` makes it (`export default op`). */
export interface FetchHandler {
  fetch(request: Request): Promise<Response> | Response;
}

export function httpTransport(url: string): Transport {
  const base = url.replace(/\/+$/, '');
  const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: 128 });
  return {
    url: base,
    send: ({ method, path, headers, body, timeoutMs }) =>
      withDeadline(timeoutMs, async (signal) => {
        const response = await request(`${base}${path}`, { method, headers, body, dispatcher, signal });
        return { status: response.statusCode, text: await response.body.text() };
      }),
    close: () => dispatcher.close(),
  };
}

export function inProcessTransport(handler: FetchHandler): Transport {
  const base = 'http://in-process';
  return {
    url: base,
    send: ({ method, path, headers, body, timeoutMs }) =>
      withDeadline(timeoutMs, async (signal) => {
        const answer = Promise.resolve(
          handler.fetch(new Request(`${base}${path}`, { method, headers, body, signal })),
        );
        const timedOut = new Promise<never>((_, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
        );
        const response = await Promise.race([answer, timedOut]);
        return { status: response.status, text: await response.text() };
      }),
    close: async () => {},
  };
}

/**
 * Runs `call` with a signal that aborts with a TimeoutError after `timeoutMs`. Unlike
 * AbortSignal.timeout, the timer goes when the call settles: at hundreds of calls per second, 30-s
 * timers kept every call's signal, request and response alive for 30 s.
 */
async function withDeadline<T>(timeoutMs: number, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')),
    timeoutMs,
  );
  try {
    return await call(controller.signal);
  } finally {
    clearTimeout(timer);
  }
}
