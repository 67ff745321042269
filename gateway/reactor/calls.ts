/**
 * The reactor's one call path: due calls become the protocol's due handlers (with their idempotency
 * keys and sub-handler progress), grouped into one call per service, and come back as one outcome per
 * due call, plus the services' updates of the memo.
 */
import type { DueHandler, Outcome, Reason } from '../../protocol/index.ts';
import { type CallSubject, callServices, idempotencyKey, type RetryDelays } from '../dispatch/calls.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import type { Logger } from '../logging.ts';
import type { StoredState } from '../state/storage.ts';
import { type DueCall, type Named, nameOf } from './model.ts';
import { progressOf, subhandlerKey } from './outcomes.ts';

export interface CallResults<S> {
  /** One per due call, but those of services that are down. */
  outcomes: Array<[DueCall<S>, Outcome]>;
  /** What each service changed in its memo, in the order they answered (`null` removes a key). */
  memoUpdates: Array<{ service: string; updates: Record<string, unknown> }>;
  /** Some service is down and was not called: resolves when the first such is back. */
  down?: Promise<void>;
}

/** How the reactor calls handlers: the function services in the gateway, anything else in a test. */
export type CallHandlers<S> = (
  due: readonly DueCall<S>[],
  subject: Omit<CallSubject, 'reason' | 'othersResults'> & {
    reason: Reason;
    stored: StoredState;
    /** The keys of `status` other services' results are at, by service: a patch may not set them. */
    othersResults: (service: string) => ReadonlySet<string>;
  },
  log: Logger,
) => Promise<CallResults<S>>;

/** Calls function services, retrying a service that failed after `retryDelaysS`. */
export const functionServiceCaller =
  (retryDelaysS: RetryDelays): CallHandlers<FunctionService> =>
  async (due, subject, log) => {
    if (due.length === 0) return { outcomes: [], memoUpdates: [] };
    const byService = new Map<FunctionService, DueCall<FunctionService>[]>();
    for (const call of due) byService.set(call.service, [...(byService.get(call.service) ?? []), call]);
    const uid = subject.object.metadata.uid;
    const keys = new Map<DueCall<FunctionService>, string>();
    const answers = await callServices(
      [...byService].map(([service, calls]) => {
        const others = subject.othersResults(service.name);
        return {
          service,
          handlers: calls.map((call) => {
            const handler = dueHandler(call, uid, subject.reason, subject.stored, others.has(call.spec.id));
            keys.set(call, handler.idempotencyKey);
            return handler;
          }),
        };
      }),
      { ...subject, othersResults: (service) => subject.othersResults(service.name) },
      retryDelaysS,
      log,
    );
    const outcomes = answers.flatMap(({ service, outcomes, down, traceId }) =>
      down
        ? []
        : (byService.get(service) ?? []).map((call): [DueCall<FunctionService>, Outcome] => [
            {
              ...call,
              called: { idempotencyKey: keys.get(call) as string, ...(traceId ? { traceId } : {}) },
            },
            outcomes[call.spec.id] as Outcome,
          ]),
    );
    const down = answers.flatMap((answer) => answer.down ?? []);
    return {
      outcomes,
      memoUpdates: answers.flatMap(({ service, memo }) =>
        memo ? [{ service: service.name, updates: memo }] : [],
      ),
      ...(down.length > 0 ? { down: Promise.race(down) } : {}),
    };
  };

/**
 * The idempotency key depends on the object, the handler, the cause and the state the change started
 * from, which stay the same until the change is handled: across retries, restarts and crashes alike;
 * and on the service when another binds the same id on the resource (`shared`), so that no two
 * services' handlers ever have one key. A service alone keeps the key it always had.
 */
export function dueHandler<S extends Named>(
  call: DueCall<S>,
  uid: string,
  reason: Reason,
  stored: StoredState,
  shared: boolean,
): DueHandler {
  const prefix = progressOf(call, subhandlerKey(call.spec.id, ''));
  const subhandlers = Object.fromEntries(
    Object.entries(stored.progress ?? {})
      .filter(([key]) => key.startsWith(prefix))
      .map(([key, record]) => [
        key.slice(prefix.length),
        { retry: record.retries, done: Boolean(record.success || record.failure) },
      ]),
  );
  return {
    id: call.spec.id,
    retry: call.progress.retries,
    started: call.progress.started,
    idempotencyKey: idempotencyKey(
      uid,
      call.spec.id,
      reason,
      stored.essence ?? '',
      ...(shared ? [nameOf(call.service)] : []),
    ),
    ...(call.old === undefined ? {} : { old: call.old }),
    ...(call.new === undefined ? {} : { new: call.new }),
    ...(call.diff === undefined ? {} : { diff: call.diff }),
    ...(Object.keys(subhandlers).length > 0 ? { subhandlers } : {}),
  };
}
