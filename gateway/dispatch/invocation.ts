import { randomBytes } from 'node:crypto';
import {
  type ActivityInvocation,
  type ActivityKind,
  type DueActivity,
  type DueHandler,
  type InvocationRequest,
  type KubernetesObject,
  PROTOCOL,
  type Reason,
  type ResolvedResource,
} from '../../protocol/index.ts';

const TRACE_ID_BYTES = 24;
/** Random bytes for trace ids, drawn from OpenSSL for 256 contexts at a time, not for each call. */
let randomPool = Buffer.alloc(0);
let randomOffset = 0;

/** A W3C trace context for a new trace: what a call starts when nothing upstream traced it. */
export function newTraceparent(): string {
  if (randomOffset + TRACE_ID_BYTES > randomPool.byteLength) {
    randomPool = randomBytes(TRACE_ID_BYTES * 256);
    randomOffset = 0;
  }
  const ids = randomPool.toString('hex', randomOffset, randomOffset + TRACE_ID_BYTES);
  randomOffset += TRACE_ID_BYTES;
  return `00-${ids.slice(0, 32)}-${ids.slice(32)}-01`;
}

/**
 * The request for one cycle of one object. managedFields are left out: they are bookkeeping of the
 * API server, often the largest part of an object, and no handler should decide on them. `traceparent`:
 * the call's span's, when it is traced; a new trace's otherwise.
 */
export function invocationRequest(
  reason: Reason,
  resource: ResolvedResource,
  object: KubernetesObject,
  handlers: DueHandler[],
  timeoutMs: number,
  traceparent = newTraceparent(),
): InvocationRequest {
  const { managedFields: _managedFields, ...metadata } = object.metadata;
  return {
    protocol: PROTOCOL,
    reason,
    resource: {
      group: resource.group,
      version: resource.version,
      plural: resource.plural,
      kind: resource.kind,
      namespaced: resource.namespaced,
    },
    body: { ...object, metadata: metadata as KubernetesObject['metadata'] },
    handlers,
    deadline: new Date(Date.now() + timeoutMs).toISOString(),
    traceparent,
  };
}

/** The call of an activity's due handlers: about no object; `memo` is the service's operator memo. */
export function activityRequest(
  activity: ActivityKind,
  handlers: DueActivity[],
  timeoutMs: number,
  memo: Record<string, unknown>,
  traceparent = newTraceparent(),
): ActivityInvocation {
  return {
    protocol: PROTOCOL,
    reason: activity,
    handlers,
    deadline: new Date(Date.now() + timeoutMs).toISOString(),
    ...(Object.keys(memo).length > 0 ? { memo } : {}),
    traceparent,
  };
}
