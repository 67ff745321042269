import type {
  DueHandler,
  InvocationRequest,
  KubernetesObject,
  Reason,
  ResolvedResource,
} from '../protocol/index.ts';
import type { Logger } from './logger.ts';

export type Fields = Record<string, unknown>;

/** What a handler receives, as Kopf's keyword arguments. `body` and everything under it is frozen. */
export interface HandlerContext<Spec extends object = Fields, Status extends object = Fields> {
  body: Readonly<KubernetesObject>;
  spec: Readonly<Spec>;
  meta: Readonly<KubernetesObject['metadata']>;
  status: Readonly<Status>;
  uid: string;
  name: string;
  /** Undefined for cluster-scoped objects. */
  namespace: string | undefined;
  labels: Readonly<Record<string, string>>;
  annotations: Readonly<Record<string, string>>;
  resource: ResolvedResource;
  reason: Reason;
  /** 0 on the first attempt. */
  retry: number;
  /** When the first attempt started. */
  started: Date;
  /** Milliseconds since `started`. */
  runtime: number;
  /** The same for every attempt at the same change. */
  idempotencyKey: string;
  logger: Logger;
}

export type Handler<Spec extends object = Fields, Status extends object = Fields> = (
  context: HandlerContext<Spec, Status>,
) => unknown;

const EMPTY = Object.freeze({});

export function handlerContext(request: InvocationRequest, due: DueHandler, logger: Logger): HandlerContext {
  const { body } = request;
  const { metadata } = body;
  const started = new Date(due.started);
  return {
    body,
    spec: body.spec ?? EMPTY,
    meta: metadata,
    status: body.status ?? EMPTY,
    uid: metadata.uid,
    name: metadata.name,
    namespace: metadata.namespace,
    labels: metadata.labels ?? EMPTY,
    annotations: metadata.annotations ?? EMPTY,
    resource: request.resource,
    reason: request.reason,
    retry: due.retry,
    started,
    runtime: Date.now() - started.getTime(),
    idempotencyKey: due.idempotencyKey,
    logger,
  };
}

/** Every handler of a call sees the same body, so one handler must not be able to change what the next one sees. */
export function deepFreeze<T>(value: T): Readonly<T> {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
