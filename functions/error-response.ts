import type { Context } from 'hono';
import { type ErrorResponse, PROTOCOL } from '../protocol/index.ts';

export function errorResponse(
  c: Context,
  status: 400 | 401 | 404 | 413 | 500,
  error: string,
  missingHandlers?: readonly string[],
): Response {
  const body: ErrorResponse = {
    protocol: PROTOCOL,
    error,
    ...(missingHandlers?.length ? { missingHandlers: [...missingHandlers] } : {}),
  };
  return c.json(body, status);
}
