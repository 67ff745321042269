import type { PROTOCOL } from './version.ts';

/** A resource as the gateway resolved it through API discovery. */
export interface ResolvedResource {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

export interface KubernetesObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    uid: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    deletionTimestamp?: string;
    [key: string]: unknown;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  [key: string]: unknown;
}

export type Reason = 'create';

/** One handler that is due in this call, with the progress the gateway keeps for it. */
export interface DueHandler {
  id: string;
  /** 0 on the first attempt. */
  retry: number;
  /** ISO 8601 time of the first attempt. */
  started: string;
  /** The same for every attempt at the same change: lets handlers make external side effects idempotent. */
  idempotencyKey: string;
}

/** One call carries every handler due for one object in one processing cycle. */
export interface InvocationRequest {
  protocol: typeof PROTOCOL;
  reason: Reason;
  resource: ResolvedResource;
  body: KubernetesObject;
  handlers: DueHandler[];
  /** ISO 8601: the gateway stops waiting for the answer then. */
  deadline: string;
}

export type Outcome =
  /** `result`, when present, is stored under `status.<handler id>`. */
  | { status: 'success'; result?: unknown }
  /** Retry after `delay` seconds. */
  | { status: 'temporary'; message: string; delay: number }
  /** Do not retry this change. */
  | { status: 'permanent'; message: string };

export type LogLevel = 'debug' | 'info' | 'warning' | 'error';

export interface LogLine {
  level: LogLevel;
  message: string;
  /** The handler that logged it, when there was one. */
  handler?: string;
}

export interface InvocationResponse {
  protocol: typeof PROTOCOL;
  /** One outcome per handler of the request, by id. */
  outcomes: Record<string, Outcome>;
  logs: LogLine[];
}

/** The body of every non-2xx answer from a function service. */
export interface ErrorResponse {
  protocol: typeof PROTOCOL;
  error: string;
}
