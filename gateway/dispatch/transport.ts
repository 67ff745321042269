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
    async send({ method, path, headers, body, timeoutMs }) {
      const response = await request(`${base}${path}`, {
        method,
        headers,
        body,
        dispatcher,
        signal: AbortSignal.timeout(timeoutMs),
      });
      return { status: response.statusCode, text: await response.body.text() };
    },
    close: () => dispatcher.close(),
  };
}

export function inProcessTransport(handler: FetchHandler): Transport {
  const base = 'http://in-process';
  return {
    url: base,
    async send({ method, path, headers, body, timeoutMs }) {
      const signal = AbortSignal.timeout(timeoutMs);
      const answer = Promise.resolve(
        handler.fetch(new Request(`${base}${path}`, { method, headers, body, signal })),
      );
      const timedOut = new Promise<never>((_, reject) =>
        signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
      );
      const response = await Promise.race([answer, timedOut]);
      return { status: response.status, text: await response.text() };
    },
    close: async () => {},
  };
}
