/**
 * Operator activities (Kopf's on.startup, on.cleanup, on.probe, on.login): handlers about no resource,
 * registered apart from the resource handlers, published in the manifest's `activities`, and called
 * by the gateway at moments of its own life with the activity as the reason and no object.
 */
import {
  ACTIVITY_KIND_NAMES,
  ACTIVITY_KINDS,
  type ActivityInvocation,
  type ActivityKind,
  type ActivitySpec,
  type Credentials,
  credentialsProblem,
  type InvocationResponse,
  type LogLine,
  type Outcome,
  PROTOCOL,
} from '../protocol/index.ts';
import { deepFreeze } from '../protocol/json.ts';
import { PermanentError, TemporaryError } from './errors.ts';
import { checkIndexesOption, declaredIndexes, type Index, indexMaps } from './indexes.ts';
import { memoUpdates, success } from './invoke.ts';
import { collectingLogger, type Logger } from './logger.ts';
import { checkCommonOptions, checkedId, DEFAULT_BACKOFF_SECONDS, pick } from './registry.ts';
import { inHandlerSpan } from './tracing.ts';

/** What an activity handler receives: no object, as it is about none. */
export interface ActivityContext {
  /** The activity calling it: one function may be registered for several. */
  activity: ActivityKind;
  /** 0 on the first attempt. */
  retry: number;
  /** When the first attempt started. */
  started: Date;
  /** Milliseconds since `started`. */
  runtime: number;
  logger: Logger;
  /**
   * The operator's memo, shared by this service's activities and kept by the gateway across their
   * calls (in its memory, so lost when it restarts): what startup puts there, probes and cleanup read.
   */
  memo: Record<string, unknown>;
  /** The `param` option the handler was registered with. */
  param: unknown;
  /** Probes: the indexes named in the handler's `indexes` option, by id, complete. */
  indexes: Readonly<Record<string, Index>>;
}

/** An activity handler: what it returns (JSON) is its result; a probe's is reported by the liveness endpoint. */
export type ActivityHandler<Result = unknown> = (context: ActivityContext) => Result | Promise<Result>;

/** Every option of every activity; each takes those its entry in the protocol's ACTIVITY_KINDS lists. */
export interface ActivityOptions {
  /** Defaults to the function's name. */
  id?: string;
  /** Any value: passed back to the handler as `param`. */
  param?: unknown;
  /** Attempts before the handler is given up as failed (a startup handler given up fails the start). */
  retries?: number;
  /** Seconds since the first attempt before the handler is given up; probes: how long one call may take. */
  timeout?: number;
  /** Seconds before retrying after an error that is neither a TemporaryError nor a PermanentError; 60 by default. */
  backoff?: number;
  /** Probes: the operator's indexes (by id) the handler receives as `indexes`. */
  indexes?: string[];
}

type Kinds = typeof ACTIVITY_KINDS;

/** The options `op.on.<activity>` takes. */
export type ActivityOptionsOf<Kind extends ActivityKind> = Pick<
  ActivityOptions,
  'id' | 'param' | Kinds[Kind]['options'][number]
>;

export interface RegisterActivity<Options, Result> {
  (handler: ActivityHandler<Result>): void;
  (options: Options, handler: ActivityHandler<Result>): void;
}

/** `op.on.startup(fn)`, `op.on.probe({ id: 'now' }, fn)`; login handlers return Credentials. */
export type ActivityOn = {
  [Kind in ActivityKind]: RegisterActivity<
    ActivityOptionsOf<Kind>,
    Kind extends 'login' ? Credentials : unknown
  >;
};

export interface RegisteredActivity extends ActivitySpec {
  fn: ActivityHandler;
  param: unknown;
  /** Seconds before retrying after an arbitrary error. */
  backoff: number;
}

export interface Activities {
  on: ActivityOn;
  /** By id, in registration order. */
  activities: ReadonlyMap<string, RegisteredActivity>;
}

export function createActivities(): Activities {
  const activities = new Map<string, RegisteredActivity>();
  const register =
    (kind: ActivityKind) =>
    (...rest: unknown[]): void => {
      const where = `on.${kind}`;
      if (rest.length < 1 || rest.length > 2) {
        throw new TypeError(`${where}: expected (options?, handler), got ${rest.length} arguments`);
      }
      const [options, fn] = rest.length === 1 ? [{}, rest[0]] : rest;
      if (typeof fn !== 'function') throw new TypeError(`${where}: the handler must be a function`);
      checkActivityOptions(where, kind, options);
      const id = checkedId(where, options.id ?? fn.name, activities, 'activity');
      const published = pick(options, ['retries', 'timeout', 'backoff', 'indexes']);
      activities.set(id, {
        id,
        kind,
        ...(published ? { options: published } : {}),
        fn: fn as ActivityHandler,
        param: options.param,
        backoff: options.backoff ?? DEFAULT_BACKOFF_SECONDS,
      });
    };
  const on = Object.fromEntries(ACTIVITY_KIND_NAMES.map((kind) => [kind, register(kind)])) as ActivityOn;
  return { on, activities };
}

/** What the manifest publishes of an activity. */
export function activitySpecOf({ id, kind, options }: RegisteredActivity): ActivitySpec {
  return { id, kind, ...(options ? { options } : {}) };
}

function checkActivityOptions(
  where: string,
  kind: ActivityKind,
  options: unknown,
): asserts options is ActivityOptions {
  checkCommonOptions(where, options, ['id', 'param', ...ACTIVITY_KINDS[kind].options]);
  checkIndexesOption(where, (options as ActivityOptions).indexes);
}

/** Runs the due activity handlers one after another, in the request's order, sharing the memo. */
export async function invokeActivities(
  request: ActivityInvocation,
  activities: ReadonlyMap<string, RegisteredActivity>,
): Promise<InvocationResponse> {
  const frozen = deepFreeze(request);
  const before = frozen.memo ?? {};
  const memo: Record<string, unknown> = structuredClone(before);
  const logs: LogLine[] = [];
  const outcomes: [string, Outcome][] = [];
  const indexes = indexMaps(frozen.indexes);
  const traced = { 'causeway.cause': frozen.reason };
  for (const due of frozen.handlers) {
    const activity = activities.get(due.id) as RegisteredActivity;
    const started = new Date(due.started);
    const context: ActivityContext = {
      activity: frozen.reason,
      retry: due.retry,
      started,
      runtime: Date.now() - started.getTime(),
      logger: collectingLogger(logs, due.id),
      memo,
      param: activity.param,
      indexes: declaredIndexes(indexes, activity.options?.indexes),
    };
    const outcome = await inHandlerSpan(frozen.traceparent, due.id, traced, (thrown) =>
      attemptActivity(activity, context, thrown),
    );
    outcomes.push([due.id, outcome]);
  }
  const updates = memoUpdates(before, memo, logs);
  return {
    protocol: PROTOCOL,
    outcomes: Object.fromEntries(outcomes),
    logs,
    ...(updates ? { memo: updates } : {}),
  };
}

/** Runs the activity's handler; `thrown` is told what it threw (its span records it). */
async function attemptActivity(
  activity: RegisteredActivity,
  context: ActivityContext,
  thrown: (error: unknown) => void,
): Promise<Outcome> {
  let returned: unknown;
  try {
    returned = await activity.fn(context);
  } catch (error) {
    thrown(error);
    const message = error instanceof Error ? error.message || error.name : String(error);
    if (error instanceof PermanentError) return { status: 'permanent', message };
    if (error instanceof TemporaryError) return { status: 'temporary', message, delay: error.delay };
    return { status: 'temporary', message, delay: activity.backoff };
  }
  if (context.activity === 'login') {
    // Said here, where the mistake is, rather than by a gateway that cannot log in.
    const problem = credentialsProblem(returned);
    if (problem) return { status: 'permanent', message: `login handler ${activity.id}: ${problem}` };
  }
  return success(returned);
}
