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
  type ActivityOptions as SpecOptions,
} from '../protocol/index.ts';
import { isObject } from '../protocol/json.ts';
import { deepFreeze } from './context.ts';
import { PermanentError, TemporaryError } from './errors.ts';
import { memoUpdates, success } from './invoke.ts';
import { collectingLogger, type Logger } from './logger.ts';

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

/** Arbitrary errors are retried, as resource handlers' are (Kopf's settings.execution.default_backoff). */
const DEFAULT_BACKOFF_SECONDS = 60;

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
      const id = options.id ?? fn.name;
      if (!id) {
        throw new TypeError(
          `${where}: an anonymous handler needs an id: pass { id: '...' } or use a named function`,
        );
      }
      if (/\s/.test(id)) throw new TypeError(`${where}: handler id "${id}" must not contain whitespace`);
      if (activities.has(id)) {
        throw new Error(`${where}: activity id "${id}" is already registered; pass a distinct { id: '...' }`);
      }
      const published = specOptions(options);
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

function specOptions({ retries, timeout, backoff }: ActivityOptions): SpecOptions | undefined {
  const picked: SpecOptions = {
    ...(retries === undefined ? {} : { retries }),
    ...(timeout === undefined ? {} : { timeout }),
    ...(backoff === undefined ? {} : { backoff }),
  };
  return Object.keys(picked).length > 0 ? picked : undefined;
}

function checkActivityOptions(
  where: string,
  kind: ActivityKind,
  options: unknown,
): asserts options is ActivityOptions {
  if (!isObject(options)) throw new TypeError(`${where}: options must be an object, got ${String(options)}`);
  const known: readonly string[] = ['id', 'param', ...ACTIVITY_KINDS[kind].options];
  for (const name of Object.keys(options)) {
    if (!known.includes(name)) {
      throw new TypeError(`${where}: unknown option "${name}"; known options: ${known.join(', ')}`);
    }
  }
  const { id, retries, timeout, backoff } = options as ActivityOptions;
  if (id !== undefined && (typeof id !== 'string' || id === '')) {
    throw new TypeError(`${where}: option "id" must be a non-empty string`);
  }
  if (retries !== undefined && !(Number.isInteger(retries) && retries >= 1)) {
    throw new TypeError(`${where}: option "retries" must be a whole number of attempts, at least 1`);
  }
  if (timeout !== undefined && !(typeof timeout === 'number' && Number.isFinite(timeout) && timeout > 0)) {
    throw new TypeError(`${where}: option "timeout" must be a positive number of seconds`);
  }
  if (backoff !== undefined && !(typeof backoff === 'number' && Number.isFinite(backoff) && backoff >= 0)) {
    throw new TypeError(`${where}: option "backoff" must be a non-negative number of seconds`);
  }
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
    };
    outcomes.push([due.id, await attemptActivity(activity, context)]);
  }
  const updates = memoUpdates(before, memo, logs);
  return {
    protocol: PROTOCOL,
    outcomes: Object.fromEntries(outcomes),
    logs,
    ...(updates ? { memo: updates } : {}),
  };
}

async function attemptActivity(activity: RegisteredActivity, context: ActivityContext): Promise<Outcome> {
  let returned: unknown;
  try {
    returned = await activity.fn(context);
  } catch (error) {
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
