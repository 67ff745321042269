import {
  type ActivityInvocation,
  callableFor,
  type InvocationBatch,
  type InvocationRequest,
  isActivityKind,
  PROTOCOL,
} from '../protocol/index.ts';
import { isObject } from '../protocol/json.ts';
import { ADMISSION_REQUEST, DUE_HANDLER, INVOCATION_REQUEST } from '../protocol/schema/checks.ts';
import type { RegisteredActivity } from './activities.ts';
import type { Registered } from './registry.ts';

/** The request is not one this service can act on; answered with 400. */
export class BadRequest extends Error {
  override name = 'BadRequest';
  /** The handlers a call named that this service does not have: the gateway's manifest is older. */
  readonly missingHandlers: string[] | undefined;

  constructor(message: string, missingHandlers?: string[]) {
    super(message);
    this.missingHandlers = missingHandlers;
  }
}

/**
 * Checks what the handlers and the response rely on. The gateway is trusted (the request is signed),
 * so this catches version skew and gateway bugs, not attacks.
 */
export function parseInvocation(
  bytes: Uint8Array,
  handlers: ReadonlyMap<string, Registered>,
  activities: ReadonlyMap<string, RegisteredActivity> = new Map(),
): InvocationRequest | ActivityInvocation | InvocationBatch {
  if (bytes.byteLength === 0) throw new BadRequest('the request has no body: expected an InvocationRequest');
  let request: InvocationRequest | InvocationBatch;
  try {
    request = JSON.parse(new TextDecoder().decode(bytes));
  } catch (error) {
    throw new BadRequest(`the request body is not JSON: ${(error as Error).message}`);
  }
  if (isObject(request) && 'batch' in request) return checkBatch(request as InvocationBatch, handlers);
  return checkCall(request as InvocationRequest, handlers, activities);
}

/** Checks a batch and each of its calls (a batch holds resource calls only). */
export function checkBatch(
  request: InvocationBatch,
  handlers: ReadonlyMap<string, Registered>,
): InvocationBatch {
  checkProtocol(request);
  if (!Array.isArray(request.batch)) throw new BadRequest('"batch" must be a list of calls');
  // Every handler missing, of all the calls: the gateway learns at once what it no longer may call.
  const missing = new Set<string>();
  for (const call of request.batch) {
    try {
      checkInvocation(call, handlers);
    } catch (error) {
      if (!(error instanceof BadRequest && error.missingHandlers)) throw error;
      for (const id of error.missingHandlers) missing.add(id);
    }
  }
  if (missing.size > 0) throw missingHandlers([...missing], handlers);
  return request;
}

/** Checks a call however it arrived: an activity's (told by its reason), or a resource's. */
export function checkCall(
  request: InvocationRequest | ActivityInvocation,
  handlers: ReadonlyMap<string, Registered>,
  activities: ReadonlyMap<string, RegisteredActivity>,
): InvocationRequest | ActivityInvocation {
  if (isObject(request) && isActivityKind(request.reason)) {
    return checkActivityInvocation(request as ActivityInvocation, activities);
  }
  return checkInvocation(request as InvocationRequest, handlers);
}

function checkProtocol(request: unknown): void {
  if (!isObject(request)) throw new BadRequest('the request body is not a JSON object');
  if (request.protocol !== PROTOCOL) {
    throw new BadRequest(`protocol "${String(request.protocol)}" is not spoken here; expected "${PROTOCOL}"`);
  }
}

function missingHandlers(ids: string[], handlers: ReadonlyMap<string, Registered>): BadRequest {
  const named = ids.map((id) => `"${id}"`).join(', ');
  return new BadRequest(
    `no handler ${named} here; this service has: ${[...handlers.keys()].join(', ')}`,
    ids,
  );
}

/** Checks an activity's call as checkInvocation checks a resource's. */
export function checkActivityInvocation(
  request: ActivityInvocation,
  activities: ReadonlyMap<string, RegisteredActivity>,
): ActivityInvocation {
  checkProtocol(request);
  if (!Array.isArray(request.handlers)) throw new BadRequest('the request has no "handlers" list');
  if (request.memo !== undefined && !INVOCATION_REQUEST.memo.test(request.memo)) {
    throw new BadRequest('"memo" must be an object of keys to values');
  }
  checkIndexes(request.indexes, request.indexVersions);
  const seen = new Set<string>();
  for (const due of request.handlers) {
    const activity = activities.get(due?.id);
    if (!activity) {
      throw new BadRequest(
        `no activity "${String(due?.id)}" here; this service has: ${[...activities.keys()].join(', ') || 'none'}`,
      );
    }
    if (seen.has(due.id)) throw new BadRequest(`activity "${due.id}" is listed twice`);
    seen.add(due.id);
    if (activity.kind !== request.reason) {
      throw new BadRequest(`"${due.id}" is a ${activity.kind} activity, not one for "${request.reason}"`);
    }
    checkDue(due, `activity "${due.id}"`);
  }
  return request;
}

/** What every due handler, an activity's too, says of its attempts: how many before, since when. */
function checkDue(due: { retry: unknown; started: unknown }, which: string): void {
  const { retry, started } = DUE_HANDLER;
  if (!retry.test(due.retry)) throw new BadRequest(`${which}: "retry" must be ${retry.expected}`);
  if (!started.test(due.started)) throw new BadRequest(`${which}: "started" must be ${started.expected}`);
}

/** Indexes arrive as lists of [key, values] by id; their versions, as text by id. */
function checkIndexes(indexes: unknown, versions: unknown): void {
  if (versions !== undefined && !INVOCATION_REQUEST.indexVersions.test(versions)) {
    throw new BadRequest('"indexVersions" must map index ids to versions, as text');
  }
  if (indexes !== undefined && !INVOCATION_REQUEST.indexes.test(indexes)) {
    throw new BadRequest('"indexes" must map index ids to lists of [key, values]');
  }
}

/** Checks an InvocationRequest however it arrived: parsed from a body, or handed over in-process. */
export function checkInvocation(request: InvocationRequest, handlers: ReadonlyMap<string, Registered>) {
  checkProtocol(request);
  if (!isObject(request.body) || !isObject(request.body.metadata)) {
    throw new BadRequest('the request carries no object: "body" with "metadata" is required');
  }
  if (!isObject(request.resource)) throw new BadRequest('the request has no "resource"');
  if (!Array.isArray(request.handlers)) throw new BadRequest('the request has no "handlers" list');
  if (request.memo !== undefined && !INVOCATION_REQUEST.memo.test(request.memo)) {
    throw new BadRequest('"memo" must be an object of keys to values');
  }
  // As text, as before: what reads as a trace context is taken as one.
  if (
    request.traceparent !== undefined &&
    !INVOCATION_REQUEST.traceparent.test(String(request.traceparent))
  ) {
    throw new BadRequest(`"traceparent" is not a W3C trace context: ${JSON.stringify(request.traceparent)}`);
  }
  checkIndexes(request.indexes, request.indexVersions);
  if (request.reason === 'admission') {
    const review = request.admission;
    if (
      !isObject(review) ||
      !ADMISSION_REQUEST.uid.test(review.uid) ||
      !ADMISSION_REQUEST.operation.test(review.operation) ||
      !ADMISSION_REQUEST.dryRun.test(review.dryRun) ||
      !isObject(review.userInfo)
    ) {
      throw new BadRequest('an admission request needs "admission" with uid, operation, dryRun and userInfo');
    }
  }
  for (const field of ['stop', 'stopped'] as const) {
    const check = INVOCATION_REQUEST[field];
    if (request[field] !== undefined && !check.test(request[field])) {
      throw new BadRequest(`"${field}" must be ${check.expected}, got ${JSON.stringify(request[field])}`);
    }
  }
  const { event } = INVOCATION_REQUEST;
  if (request.event !== undefined && !event.test(request.event)) {
    throw new BadRequest(`"event" must be ${event.expected}, got ${JSON.stringify(request.event)}`);
  }
  const missing = request.handlers.filter((due) => !handlers.has(due?.id)).map((due) => String(due?.id));
  if (missing.length > 0) throw missingHandlers(missing, handlers);
  const seen = new Set<string>();
  for (const due of request.handlers) {
    const handler = handlers.get(due.id) as Registered;
    if (seen.has(due.id)) throw new BadRequest(`handler "${due.id}" is listed twice`);
    seen.add(due.id);
    if (!callableFor(handler.kind, request.reason)) {
      throw new BadRequest(
        `handler "${due.id}" is a ${handler.kind} handler, not due for reason "${request.reason}"`,
      );
    }
    if (!handler.fn) {
      throw new BadRequest(`index "${due.id}" is declarative: the gateway computes it, never calls it`);
    }
    checkDue(due, `handler "${due.id}"`);
    if (!DUE_HANDLER.idempotencyKey.test(due.idempotencyKey)) {
      throw new BadRequest(
        `handler "${due.id}": "idempotencyKey" must be ${DUE_HANDLER.idempotencyKey.expected}`,
      );
    }
    if (due.diff !== undefined && !Array.isArray(due.diff)) {
      throw new BadRequest(`handler "${due.id}": "diff" must be a list of differences`);
    }
  }
  return request;
}
