import { callableFor, type InvocationRequest, PROTOCOL } from '../protocol/index.ts';
import { isObject } from '../protocol/json.ts';
import type { Registered } from './registry.ts';

const EVENT_TYPES: readonly unknown[] = ['ADDED', 'MODIFIED', 'DELETED'];
const OPERATIONS: readonly unknown[] = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'];

/** The request is not one this service can act on; answered with 400. */
export class BadRequest extends Error {
  override name = 'BadRequest';
}

/**
 * Checks what the handlers and the response rely on. The gateway is trusted (the request is signed),
 * so this catches version skew and gateway bugs, not attacks.
 */
export function parseInvocation(
  bytes: Uint8Array,
  handlers: ReadonlyMap<string, Registered>,
): InvocationRequest {
  if (bytes.byteLength === 0) throw new BadRequest('the request has no body: expected an InvocationRequest');
  let request: InvocationRequest;
  try {
    request = JSON.parse(new TextDecoder().decode(bytes));
  } catch (error) {
    throw new BadRequest(`the request body is not JSON: ${(error as Error).message}`);
  }
  return checkInvocation(request, handlers);
}

const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** Checks an InvocationRequest however it arrived: parsed from a body, or handed over in-process. */
export function checkInvocation(request: InvocationRequest, handlers: ReadonlyMap<string, Registered>) {
  if (!isObject(request)) throw new BadRequest('the request body is not a JSON object');
  if (request.protocol !== PROTOCOL) {
    throw new BadRequest(`protocol "${String(request.protocol)}" is not spoken here; expected "${PROTOCOL}"`);
  }
  if (!isObject(request.body) || !isObject(request.body.metadata)) {
    throw new BadRequest('the request carries no object: "body" with "metadata" is required');
  }
  if (!isObject(request.resource)) throw new BadRequest('the request has no "resource"');
  if (!Array.isArray(request.handlers)) throw new BadRequest('the request has no "handlers" list');
  if (request.memo !== undefined && !isObject(request.memo)) {
    throw new BadRequest('"memo" must be an object of keys to values');
  }
  if (request.traceparent !== undefined && !TRACEPARENT.test(String(request.traceparent))) {
    throw new BadRequest(`"traceparent" is not a W3C trace context: ${JSON.stringify(request.traceparent)}`);
  }
  if (request.reason === 'admission') {
    const review = request.admission;
    if (
      !isObject(review) ||
      typeof review.uid !== 'string' ||
      !OPERATIONS.includes(review.operation) ||
      typeof review.dryRun !== 'boolean' ||
      !isObject(review.userInfo)
    ) {
      throw new BadRequest('an admission request needs "admission" with uid, operation, dryRun and userInfo');
    }
  }
  if (request.event !== undefined && !EVENT_TYPES.includes(request.event)) {
    throw new BadRequest(
      `"event" must be one of ${EVENT_TYPES.join(', ')}, got ${JSON.stringify(request.event)}`,
    );
  }
  const seen = new Set<string>();
  for (const due of request.handlers) {
    const handler = handlers.get(due?.id);
    if (!handler) {
      throw new BadRequest(
        `no handler "${String(due?.id)}" here; this service has: ${[...handlers.keys()].join(', ')}`,
      );
    }
    if (seen.has(due.id)) throw new BadRequest(`handler "${due.id}" is listed twice`);
    seen.add(due.id);
    if (!callableFor(handler.kind, request.reason)) {
      throw new BadRequest(
        `handler "${due.id}" is a ${handler.kind} handler, not due for reason "${request.reason}"`,
      );
    }
    if (!Number.isInteger(due.retry) || due.retry < 0) {
      throw new BadRequest(`handler "${due.id}": "retry" must be a non-negative integer`);
    }
    if (typeof due.started !== 'string' || Number.isNaN(Date.parse(due.started))) {
      throw new BadRequest(`handler "${due.id}": "started" must be an ISO 8601 time`);
    }
    if (typeof due.idempotencyKey !== 'string') {
      throw new BadRequest(`handler "${due.id}": "idempotencyKey" must be a string`);
    }
    if (due.diff !== undefined && !Array.isArray(due.diff)) {
      throw new BadRequest(`handler "${due.id}": "diff" must be a list of differences`);
    }
  }
  return request;
}
