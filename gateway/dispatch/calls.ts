/**
 * Calls the function services for one object: one call per service with all of its due handlers,
 * the services in parallel. A service that cannot be asked, or answers badly, fails its handlers
 * temporarily; nothing it returned is applied.
 */
import { createHash } from 'node:crypto';
import type { DueHandler, KubernetesObject, Outcome, Reason } from '../../protocol/index.ts';
import type { DiscoveredResource } from '../kube/discovery.ts';
import type { Logger } from '../logging.ts';
import { subhandlerKey } from '../reactor/outcomes.ts';
import type { DueCall } from '../reactor/plan.ts';
import type { StoredState } from '../state/storage.ts';
import type { FunctionService } from './function-service.ts';
import { invocationRequest } from './invocation.ts';

/** Seconds before calling a service again after it could not be reached or answered badly. */
const SERVICE_RETRY_DELAYS_S = [1, 2, 5, 10, 30, 60];

/** Calls each service once with all of its due handlers, in parallel across services. */
export async function callServices(
  due: DueCall<FunctionService>[],
  reason: Reason,
  object: KubernetesObject,
  stored: StoredState,
  memos: Map<string, Record<string, unknown>>,
  resource: DiscoveredResource,
  log: Logger,
): Promise<Array<[DueCall<FunctionService>, Outcome]>> {
  if (due.length === 0) return [];
  const byService = new Map<FunctionService, DueCall<FunctionService>[]>();
  for (const call of due) byService.set(call.service, [...(byService.get(call.service) ?? []), call]);
  const uid = object.metadata.uid;
  const results = await Promise.all(
    [...byService].map(async ([service, calls]) => {
      const handlers = calls.map((call) => dueHandler(call, uid, reason, stored));
      try {
        const request = invocationRequest(reason, resource, object, handlers, service.timeoutMs);
        const response = await service.invoke({ ...request, memo: memos.get(uid) ?? {} });
        for (const line of response.logs)
          log.log(line.level, line.handler ? `${line.handler}: ${line.message}` : line.message);
        if (response.memo) updateMemo(memos, uid, response.memo);
        return calls.map((call): [DueCall<FunctionService>, Outcome] => [
          call,
          response.outcomes[call.spec.id] as Outcome,
        ]);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        return calls.map((call): [DueCall<FunctionService>, Outcome] => [
          call,
          { status: 'temporary', message, delay: serviceRetryDelay(call.progress.retries) },
        ]);
      }
    }),
  );
  return results.flat();
}

function updateMemo(
  memos: Map<string, Record<string, unknown>>,
  uid: string,
  updates: Record<string, unknown>,
): void {
  const memo = { ...memos.get(uid) };
  for (const [key, value] of Object.entries(updates)) {
    if (value === null) delete memo[key];
    else memo[key] = value;
  }
  memos.set(uid, memo);
}

function serviceRetryDelay(retry: number): number {
  return SERVICE_RETRY_DELAYS_S[Math.min(retry, SERVICE_RETRY_DELAYS_S.length - 1)] as number;
}

/**
 * The idempotency key depends on the object, the handler, the cause and the state the change started
 * from, which stay the same until the change is handled: across retries, restarts and crashes alike.
 */
function dueHandler(
  call: DueCall<FunctionService>,
  uid: string,
  reason: Reason,
  stored: StoredState,
): DueHandler {
  const idempotencyKey = createHash('sha256')
    .update(`${uid}\0${call.spec.id}\0${reason}\0${stored.essence ?? ''}`)
    .digest('base64url')
    .slice(0, 32);
  const prefix = subhandlerKey(call.spec.id, '');
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
    idempotencyKey,
    ...(call.old === undefined ? {} : { old: call.old }),
    ...(call.new === undefined ? {} : { new: call.new }),
    ...(call.diff === undefined ? {} : { diff: call.diff }),
    ...(Object.keys(subhandlers).length > 0 ? { subhandlers } : {}),
  };
}
