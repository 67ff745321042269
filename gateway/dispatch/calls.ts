/**
 * Calls function services about one object: one call per service with all of its due handlers, the
 * services in parallel, their log lines forwarded. A service that cannot be asked, or answers badly,
 * fails its handlers temporarily; nothing it returned is applied. A service known to be down is not
 * asked: its handlers have no outcome, and wait for it. An activity's handlers (about no object) are
 * called the same way, one service at a time. Knows the protocol, not the reactor.
 */
import { hash } from 'node:crypto';
import { type Attributes, SpanKind } from '@opentelemetry/api';
import {
  type ActivityKind,
  type DueActivity,
  type DueHandler,
  type InvocationRequest,
  type InvocationResponse,
  type KubernetesObject,
  type LogLine,
  type Outcome,
  PATHS,
  type Reason,
  type ResolvedResource,
} from '../../protocol/index.ts';
import { subjectAttributes } from '../../protocol/span-attributes.ts';
import type { Logger } from '../logging.ts';
import { backoffDelay } from '../timing.ts';
import { inSpan, serverAttributes, traceparentOf } from '../tracing/spans.ts';
import { type FunctionService, ServiceDown, ServiceError } from './function-service.ts';
import { activityRequest, invocationRequest, newTraceparent } from './invocation.ts';
import { checkMemoBound } from './memo.ts';

export interface ServiceCall {
  service: FunctionService;
  handlers: DueHandler[];
}

/** What every call of one round is about. */
export interface CallSubject {
  reason: Reason;
  resource: ResolvedResource;
  object: KubernetesObject;
  /** Each service's own memo of the object: one service never sees nor changes another's. */
  memoOf?: (service: string) => Record<string, unknown> | undefined;
  /** The keys of `status` other services' results are at: a service's patch may not set them. */
  othersResults?: (service: FunctionService) => ReadonlySet<string>;
  event?: InvocationRequest['event'];
  admission?: InvocationRequest['admission'];
  /** How long to wait for the answers; each service's own call timeout unless given. */
  timeoutMs?: number;
  /** Daemons: asks the daemons of the handlers to stop (a call of its own, answered at once). */
  stop?: InvocationRequest['stop'];
  /** Daemons: a last call, for a daemon already asked to stop (see InvocationRequest.stopped). */
  stopped?: InvocationRequest['stopped'];
  /**
   * Daemons: a call that stays open until its deadline (`timeoutMs`), answered up to `graceMs` after
   * it, and cut off when `cut` aborts.
   */
  long?: { cut: AbortSignal; graceMs: number };
}

/** Seconds before calling a service again after it could not be reached or answered badly, by retry. */
export type RetryDelays = readonly number[];

export interface ServiceAnswer {
  service: FunctionService;
  /** By handler id: one for each handler of the call; none when the service is down. */
  outcomes: Record<string, Outcome>;
  /** The service is down and was not called: resolves when it is back. */
  down?: Promise<void>;
  /** Memo updates: `null` removes a key. */
  memo?: Record<string, unknown>;
  /** The call's trace id (of its `traceparent`), when it was made. */
  traceId?: string;
  /** Handlers of the call the service said it does not have: redeployed without them. */
  gone?: readonly string[];
}

export async function callServices(
  calls: readonly ServiceCall[],
  subject: CallSubject,
  retryDelaysS: RetryDelays,
  log: Logger,
): Promise<ServiceAnswer[]> {
  return Promise.all(
    calls.map(async ({ service, handlers }): Promise<ServiceAnswer> => {
      const timeoutMs = subject.timeoutMs ?? service.timeoutMs;
      const about = () => subjectAttributes(subject.resource, subject.object);
      const traced = { reason: subject.reason, handlers, about };
      // Known once the call's span is: a failed call's log lines carry it too.
      let traceId: string | undefined;
      const memo = subject.memoOf?.(service.name);
      try {
        const { response } = await inCallSpan(service, traced, async (traceparent) => {
          traceId = traceIdOf(traceparent);
          const request = invocationRequest(
            subject.reason,
            subject.resource,
            subject.object,
            handlers,
            timeoutMs,
            traceparent,
          );
          return service.invoke(
            {
              ...request,
              ...(memo ? { memo } : {}),
              ...(subject.event ? { event: subject.event } : {}),
              ...(subject.admission ? { admission: subject.admission } : {}),
              ...(subject.stop ? { stop: subject.stop } : {}),
              ...(subject.stopped ? { stopped: subject.stopped } : {}),
            },
            timeoutMs + (subject.long?.graceMs ?? 0),
            {
              ...(subject.long ? { cut: subject.long.cut, long: true } : {}),
              ...(subject.othersResults ? { othersResults: subject.othersResults(service) } : {}),
            },
          );
        });
        forwardLogs(response.logs, traceId, log);
        if (response.memo) checkMemoBound(memo, response.memo, service.name);
        return {
          service,
          outcomes: response.outcomes,
          ...(response.memo ? { memo: response.memo } : {}),
          ...(traceId ? { traceId } : {}),
        };
      } catch (error) {
        return { ...failedCall(service, error, handlers, retryDelaysS), ...(traceId ? { traceId } : {}) };
      }
    }),
  );
}

/** What an activity's call is about: its due handlers, and the service's operator memo. */
export interface ActivityCall {
  activity: ActivityKind;
  handlers: DueActivity[];
  memo: Record<string, unknown>;
  timeoutMs: number;
}

/** Calls a service's due handlers of one activity, in one call, as callServices calls a resource's. */
export async function callActivity(
  service: FunctionService,
  call: ActivityCall,
  retryDelaysS: RetryDelays,
  log: Logger,
): Promise<ServiceAnswer> {
  try {
    const traced = { reason: call.activity, handlers: call.handlers };
    const { response, traceparent } = await inCallSpan(service, traced, (traceparent) =>
      service.invoke(
        activityRequest(call.activity, call.handlers, call.timeoutMs, call.memo, traceparent),
        call.timeoutMs,
      ),
    );
    forwardLogs(response.logs, traceIdOf(traceparent), log);
    return { service, outcomes: response.outcomes, ...(response.memo ? { memo: response.memo } : {}) };
  } catch (error) {
    return failedCall(service, error, call.handlers, retryDelaysS);
  }
}

/** What a call's span says it is about: its cause, its handlers, and its object (protocol/span-attributes.ts). */
interface TracedCall {
  reason: string;
  handlers: readonly { id: string }[];
  about?: () => Record<string, string>;
}

/**
 * Makes a call in a span of its own, an HTTP client's for a service over HTTP: the call carries the
 * span's context as its traceparent (a new trace's when nothing traces), which the service continues.
 */
async function inCallSpan(
  service: FunctionService,
  traced: TracedCall,
  call: (traceparent: string) => Promise<InvocationResponse>,
): Promise<{ response: InvocationResponse; traceparent: string }> {
  const [name, kind] = service.inProcess
    ? [`call ${service.name}`, SpanKind.INTERNAL]
    : [`POST ${PATHS.invoke}`, SpanKind.CLIENT];
  return inSpan(name, { kind }, async (span) => {
    // Made only for a span that is recorded: a call is made often, and mostly nothing traces.
    if (span.isRecording()) span.setAttributes(callAttributes(service, traced));
    const traceparent = traceparentOf(span) ?? newTraceparent();
    try {
      const response = await call(traceparent);
      if (!service.inProcess) span.setAttribute('http.response.status_code', 200);
      return { response, traceparent };
    } catch (error) {
      if (error instanceof ServiceError && error.status !== undefined)
        span.setAttribute('http.response.status_code', error.status);
      throw error;
    }
  });
}

function callAttributes(service: FunctionService, { reason, handlers, about }: TracedCall): Attributes {
  return {
    ...about?.(),
    'causeway.service': service.name,
    'causeway.cause': reason,
    'causeway.handler': handlers.map((handler) => handler.id),
    ...(service.inProcess
      ? {}
      : {
          'http.request.method': 'POST',
          'url.full': `${service.url}${PATHS.invoke}`,
          ...serverAttributes(service.url),
        }),
  };
}

/**
 * The service's log lines, in the gateway's log: the service's words are the message (they are not
 * constant; the handler and the trace id, which joins them to the service's own logs and spans, are
 * the fields to query).
 */
function forwardLogs(lines: readonly LogLine[], traceId: string | undefined, log: Logger): void {
  for (const line of lines)
    log.log(line.level, line.message, {
      ...(line.handler ? { handler: line.handler } : {}),
      ...(traceId ? { traceId } : {}),
      origin: 'function',
    });
}

/** A call that found the service down (no outcomes: they wait), or failed: each handler to be retried. */
function failedCall(
  service: FunctionService,
  error: unknown,
  handlers: readonly { id: string; retry: number }[],
  retryDelaysS: RetryDelays,
): ServiceAnswer {
  if (error instanceof ServiceDown) return { service, outcomes: {}, down: error.recovered };
  const message = error instanceof Error ? error.message : String(error);
  // The service's own word on when to come back wins over the backoff, if it is later.
  const said =
    error instanceof ServiceError && error.retryAfterMs !== undefined ? error.retryAfterMs / 1000 : 0;
  const backoff = { delays: retryDelaysS };
  const outcomes = Object.fromEntries(
    handlers.map((handler): [string, Outcome] => [
      handler.id,
      { status: 'temporary', message, delay: Math.max(backoffDelay(backoff, handler.retry), said) },
    ]),
  );
  const missing = error instanceof ServiceError ? error.missingHandlers : undefined;
  const gone = missing && handlers.map(({ id }) => id).filter((id) => missing.includes(id));
  return { service, outcomes, ...(gone?.length ? { gone } : {}) };
}

function traceIdOf(traceparent: string | undefined): string | undefined {
  return traceparent?.split('-')[1];
}

/** The same for the same parts, whoever computes it: what makes a retried or repeated call recognisable. */
export function idempotencyKey(...parts: string[]): string {
  // The one-shot hash: a Hash object per call was a sixth of this function's time over a backlog.
  return hash('sha256', parts.join('\0'), 'base64url').slice(0, 32);
}
