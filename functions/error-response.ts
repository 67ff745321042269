import type { Context } from 'hono';
import { type ErrorResponse, PROTOCOL } from '../protocol/index.ts';

export function errorResponse(c: Context, status: 400 | 401 | 404 | 413 | 500, error: string): Response {
  return c.json({ protocol: PROTOCOL, error } satisfies ErrorResponse, status);
}
