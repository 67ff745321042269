import { request } from 'node:https';

export interface ApiTarget {
  server: string;
  token: string;
  caPem: string;
}

export interface ApiResponse {
  status: number;
  body: string;
}

/**
 * node:https rather than fetch: fetch cannot be given a CA per request without undici's dispatcher
 * API, and the apiserver's CA is per control plane.
 */
export function apiRequest(
  { server, token, caPem }: ApiTarget,
  method: string,
  path: string,
  body?: unknown,
): Promise<ApiResponse> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, server),
      {
        method,
        ca: caPem,
        timeout: 15_000,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json, */*',
          ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no response within 15 s`)));
    req.on('error', reject);
    req.end(payload);
  });
}
