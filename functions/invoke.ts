import {
  type BatchResponse,
  type DaemonStopReason,
  type DueHandler,
  type Effects,
  type InvocationBatch,
  type InvocationRequest,
  type InvocationResponse,
  isAdmissionKind,
  type KubernetesEvent,
  type LogLine,
  type MissingIndexes,
  type ObjectToApply,
  type Outcome,
  PROTOCOL,
  type ServiceObserver,
} from '../protocol/index.ts';
import { deepFreeze, equal } from '../protocol/json.ts';
import { subjectAttributes } from '../protocol/span-attributes.ts';
import { type Handler, type HandlerContext, handlerContext, type Patch } from './context.ts';
import { RunningDaemons } from './daemons.ts';
import { AdmissionError, PermanentError, TemporaryError } from './errors.ts';
import { declaredIndexes, indexMaps, indexOutcome, type KeptIndexes } from './indexes.ts';
import { asJson } from './json.ts';
import { collectingLogger, type Logger } from './logger.ts';
import type { Registered } from './registry.ts';
import { Requeue } from './requeue.ts';
import { inHandlerSpan } from './tracing.ts';

/** Where a call runs: the daemons running in the process, and the signal of the call being cut off. */
export interface InvokeScope {
  daemons: RunningDaemons;
  cut?: AbortSignal;
  /** Told of each handler run, when someone listens (`causeway serve`'s metrics). */
  observer?: ServiceObserver | undefined;
}

/** Runs the due handlers one after another, in the request's order, as Kopf runs the handlers of one cause. */
export async function invoke(
  request: InvocationRequest,
  handlers: ReadonlyMap<string, Registered>,
  scope: InvokeScope = { daemons: new RunningDaemons() },
): Promise<InvocationResponse> {
  if (request.stop) return stopDaemons(request, request.stop, scope.daemons);
  // Every handler of a call sees the same body: one must not change what the next one sees.
  const frozen = deepFreeze(request);
  const before = frozen.memo ?? {};
  // Most objects keep no memo: nothing to copy then.
  const memo: Record<string, unknown> = isEmpty(before) ? {} : structuredClone(before);
  const logs: LogLine[] = [];
  const outcomes: [string, Outcome][] = [];
  const indexes = indexMaps(frozen.indexes);
  const traced = { ...subjectAttributes(frozen.resource, frozen.body), 'causeway.cause': frozen.reason };
  for (const due of frozen.handlers) {
    const handler = handlers.get(due.id) as Registered;
    const logger = collectingLogger(logs, due.id);
    const patch: Patch = {};
    const events: KubernetesEvent[] = [];
    const apply: ObjectToApply[] = [];
    const warnings: string[] = [];
    const subhandlers: Record<string, Outcome> = {};
    const daemon =
      handler.kind === 'daemon'
        ? scope.daemons.start(due.idempotencyKey, frozen.deadline, scope.cut, frozen.stopped)
        : undefined;
    const context: HandlerContext = handlerContext(frozen, due, logger, {
      ...(daemon ? { stopped: daemon.stopped } : {}),
      memo,
      patch,
      warnings,
      events,
      apply,
      param: handler.param,
      execute: (fns) => execute(fns, handler, due, context, subhandlers),
      indexes: declaredIndexes(indexes, handler.options?.indexes),
    });
    const started = performance.now();
    const outcome = await inHandlerSpan(frozen.traceparent, due.id, traced, (thrown) =>
      attempt(handler, context, thrown),
    ).finally(() => daemon?.done());
    scope.observer?.handled(due.id, frozen.reason, outcome.status, performance.now() - started);
    if (daemon?.stopped.reason === 'round-ended') outcome.roundEnded = true;
    const withSubhandlers = Object.keys(subhandlers).length > 0 ? { ...outcome, subhandlers } : outcome;
    const withAll =
      handler.kind === 'index'
        ? withoutEffects(handler, withSubhandlers, patch, events, apply)
        : withEffects(withSubhandlers, patch, events, apply);
    outcomes.push([due.id, isAdmission(handler) ? admissionOutcome(handler, withAll, warnings) : withAll]);
  }
  const updates = memoUpdates(before, memo, logs);
  return {
    protocol: PROTOCOL,
    // fromEntries defines own properties, so an id such as "__proto__" stays an ordinary key.
    outcomes: Object.fromEntries(outcomes),
    logs,
    ...(updates ? { memo: updates } : {}),
  };
}

/**
 * A batch's calls, all at once, as the gateway would have made them one by one; answered in order. A
 * call naming an index by a version not `kept` is answered MissingIndexes, and runs nothing.
 */
export async function invokeBatch(
  request: InvocationBatch,
  handlers: ReadonlyMap<string, Registered>,
  scope?: InvokeScope,
  kept?: KeptIndexes,
): Promise<BatchResponse> {
  const batch = await Promise.all(
    request.batch.map((given) => {
      const call = kept ? kept.fill(given) : given;
      if (!('missing' in call)) return invoke(call, handlers, scope);
      const answer: MissingIndexes = { protocol: PROTOCOL, missingIndexes: call.missing };
      return answer;
    }),
  );
  return { protocol: PROTOCOL, batch };
}

function isEmpty(value: object): boolean {
  for (const _ in value) return false;
  return true;
}

/** A stop call: each daemon named that runs here is told why; the answer comes at once. */
function stopDaemons(
  request: InvocationRequest,
  reason: DaemonStopReason,
  daemons: RunningDaemons,
): InvocationResponse {
  const outcomes = request.handlers.map(({ id, idempotencyKey }): [string, Outcome] => [
    id,
    daemons.stop(idempotencyKey, reason) ? { status: 'success' } : { status: 'skipped' },
  ]);
  return { protocol: PROTOCOL, outcomes: Object.fromEntries(outcomes), logs: [] };
}

/** Runs the handler; `thrown` is told what it threw (its span records it). */
async function attempt(
  handler: Registered,
  context: HandlerContext,
  thrown?: (error: unknown) => void,
): Promise<Outcome> {
  let returned: unknown;
  try {
    if (handler.applies && !(await handler.applies(context))) return { status: 'skipped' };
    // Checked with the request: a declarative index (no function) is never called.
    returned = await (handler.fn as Handler)(context);
  } catch (error) {
    thrown?.(error);
    return failure(handler, error, context.logger);
  }
  if (returned instanceof Requeue) {
    if (handler.kind !== 'reconcile') {
      return {
        status: 'permanent',
        message: `requeue() is for reconcile handlers; a ${handler.kind} handler cannot be requeued`,
      };
    }
    return { ...success(returned.result), requeueAfter: returned.seconds };
  }
  return handler.kind === 'index' ? indexOutcome(returned) : success(returned);
}

/**
 * Runs the sub-handlers not done yet, in order, each seeing its own retry count; their outcomes go
 * back with the handler's so the gateway keeps their progress.
 */
async function execute(
  fns: Record<string, Handler>,
  parent: Registered,
  due: DueHandler,
  context: HandlerContext,
  outcomes: Record<string, Outcome>,
): Promise<void> {
  let delay = Number.POSITIVE_INFINITY;
  for (const [id, fn] of Object.entries(fns)) {
    if (due.subhandlers?.[id]?.done || outcomes[id]?.status === 'success') continue;
    const outcome = await attempt(
      { ...parent, fn, applies: undefined },
      { ...context, retry: due.subhandlers?.[id]?.retry ?? 0 },
    );
    outcomes[id] = outcome;
    if (outcome.status === 'permanent')
      throw new PermanentError(`sub-handler ${id} failed: ${outcome.message}`);
    if (outcome.status === 'temporary') delay = Math.min(delay, outcome.delay);
  }
  if (delay < Number.POSITIVE_INFINITY)
    throw new TemporaryError('sub-handlers are not all done yet', { delay });
}

export function success(result: unknown): Outcome {
  if (result === undefined || result === null) return { status: 'success' };
  try {
    return { status: 'success', result: asJson(result) };
  } catch (error) {
    return {
      status: 'permanent',
      message: `the result cannot be stored in status: ${(error as Error).message}`,
    };
  }
}

function failure(handler: Registered, error: unknown, logger: Logger): Outcome {
  const message = error instanceof Error ? error.message || error.name : String(error);
  if (isAdmission(handler)) {
    // The request waits for the answer, so nothing is retried: any failure refuses it. Only the
    // messages of Causeway's errors reach the client; others may hold what it should not see.
    if (error instanceof AdmissionError) return { status: 'denied', message, code: error.code };
    if (error instanceof PermanentError || error instanceof TemporaryError)
      return { status: 'denied', message, code: 500 };
    logger.error(`admission handler failed: ${message}`);
    return { status: 'denied', message: `admission handler ${handler.id} failed`, code: 500 };
  }
  // Kopf ignores the errors of event handlers: logged, never retried.
  if (handler.kind === 'event') {
    logger.error(`event handler failed, not to be retried: ${message}`);
    return { status: 'permanent', message };
  }
  if (error instanceof PermanentError) return { status: 'permanent', message };
  if (error instanceof TemporaryError) return { status: 'temporary', message, delay: error.delay };
  // Any other error counts as the handler's `errors` option says (Kopf's ErrorsMode).
  switch (handler.errors) {
    case 'permanent':
      return { status: 'permanent', message };
    case 'ignored':
      logger.error(`handler failed, ignored (errors: 'ignored'): ${message}`);
      return { status: 'success' };
    default:
      return { status: 'temporary', message, delay: handler.backoff };
  }
}

/** The gateway applies effects whatever the outcome, so what a handler did before failing is kept. */
function withEffects(
  outcome: Outcome,
  patch: Patch,
  events: KubernetesEvent[],
  apply: ObjectToApply[],
): Outcome {
  const effects: Effects = {};
  if (events.length > 0) effects.events = events;
  const parts: Array<[string, unknown]> = [
    ['the patch cannot be applied', patch],
    ['the objects to apply are not JSON', apply],
  ];
  const json: unknown[] = [];
  for (const [problem, value] of parts) {
    try {
      json.push(asJson(value));
    } catch (error) {
      return { ...effects, status: 'permanent', message: `${problem}: ${(error as Error).message}` };
    }
  }
  const [merge, objects] = json as [Record<string, unknown>, ObjectToApply[]];
  if (Object.keys(merge).length > 0) effects.patch = merge;
  if (objects.length > 0) effects.apply = objects;
  return { ...outcome, ...effects };
}

/** Index functions only compute values: what they patch, post or apply would be lost, so it is refused. */
function withoutEffects(
  handler: Registered,
  outcome: Outcome,
  patch: Patch,
  events: KubernetesEvent[],
  apply: ObjectToApply[],
): Outcome {
  if (Object.keys(patch).length === 0 && events.length === 0 && apply.length === 0) return outcome;
  return {
    status: 'permanent',
    message: `index ${handler.id} patched, posted events or applied objects: an index function only returns values`,
  };
}

function isAdmission(handler: Registered): boolean {
  return isAdmissionKind(handler.kind);
}

/**
 * Admission handlers answer the review: no result is stored, warnings go to the client, and only
 * mutating handlers may change the object (a validating one that patches is a mistake to report).
 */
function admissionOutcome(handler: Registered, outcome: Outcome, warnings: string[]): Outcome {
  const { result: _result, ...rest } = outcome as Outcome & { result?: unknown };
  // What fails after the handler (a patch that is not JSON, a requeue) refuses the request too.
  const answer: Outcome =
    rest.status === 'permanent' || rest.status === 'temporary' ? denial(rest, 500) : rest;
  const withWarnings = warnings.length > 0 ? { ...answer, warnings: warnings.map(String) } : answer;
  if (handler.kind === 'validate' && withWarnings.patch) {
    const { patch: _patch, ...unpatched } = withWarnings;
    return denial(
      {
        ...unpatched,
        message: `validating handler ${handler.id} filled patch; only op.on.mutate handlers change objects`,
      },
      500,
    );
  }
  return withWarnings;
}

/** The outcome as a denial with its message, keeping the effects (warnings, events), nothing of its status. */
function denial(outcome: Outcome & { message?: string }, code: number): Outcome {
  const {
    status: _status,
    message,
    delay: _delay,
    ...effects
  } = outcome as Outcome & {
    message?: string;
    delay?: number;
  };
  return { ...effects, status: 'denied', message: message ?? '', code };
}

/** Keys set or changed since the call began, and `null` for keys deleted (or set to null or undefined). */
export function memoUpdates(
  before: Readonly<Record<string, unknown>>,
  after: Record<string, unknown>,
  logs: LogLine[],
): Record<string, unknown> | undefined {
  const updates: [string, unknown][] = [];
  for (const [key, value] of Object.entries(after)) {
    const existed = Object.hasOwn(before, key);
    if (value === undefined || value === null) {
      if (existed && before[key] !== null) updates.push([key, null]);
      continue;
    }
    let json: unknown;
    try {
      json = asJson(value);
    } catch (error) {
      logs.push({ level: 'error', message: `memo "${key}" cannot be kept: ${(error as Error).message}` });
      continue;
    }
    if (!existed || !equal(before[key], json)) updates.push([key, json]);
  }
  for (const key of Object.keys(before)) {
    if (!Object.hasOwn(after, key)) updates.push([key, null]);
  }
  return updates.length > 0 ? Object.fromEntries(updates) : undefined;
}
