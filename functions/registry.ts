import {
  ADMISSION_OPERATIONS,
  type AdmissionOperation,
  HANDLER_KIND_NAMES,
  HANDLER_KINDS,
  type HandlerKind,
  type HandlerSpec,
  isAdmissionKind,
  type KindRule,
  type HandlerOptions as SpecOptions,
} from '../protocol/index.ts';
import { ADMISSION_TIMEOUT, HANDLER_ID, OPTIONS } from '../protocol/schema/checks.ts';
import type { DaemonHandler, Fields, Handler, HandlerContext } from './context.ts';
import { checkField, compileFilters, type FilterOptions } from './filters.ts';
import { checkIndexesOption, type IndexDefinitionOptions, indexDefinition } from './indexes.ts';
import { type Resource, resourceFor } from './resource.ts';

/** Every option of every kind; each kind takes those its entry in the protocol's HANDLER_KINDS lists. */
export interface HandlerOptions extends FilterOptions {
  /**
   * Defaults to the function's name, followed by `/<field>` when there is a field (as in Kopf, so one
   * function can serve several fields); the result is stored under `status.<id>`.
   */
  id?: string;
  /** Any value: passed back to the handler as `param`. */
  param?: unknown;
  /** Attempts before the handler is given up as failed. */
  retries?: number;
  /** Seconds since the first attempt before the handler is given up as failed. */
  timeout?: number;
  /** Seconds before retrying after an error that is neither a TemporaryError nor a PermanentError; 60 by default. */
  backoff?: number;
  /**
   * What an error that is neither a TemporaryError nor a PermanentError means (Kopf's `errors=`):
   * `temporary` (the default) retries after `backoff`, `permanent` fails the handler for good,
   * `ignored` logs it and counts the handler as done, without a result.
   */
  errors?: ErrorsMode;
  /** Delete handlers: not worth holding the object for, so the gateway adds no finalizer for it. */
  optional?: boolean;
  /** Resume handlers: also for objects already being deleted. */
  deleted?: boolean;
  /** Timers: seconds between calls (required). */
  interval?: number;
  /** Timers: called only once the object has not changed for this many seconds. */
  idle?: number;
  /** Timers and daemons: seconds from the first sight of a matching object to the first call. */
  initialDelay?: number;
  /** Daemons: seconds a daemon told to stop has to return before its call is cut off. */
  cancellationTimeout?: number;
  /** Timers: keep the cadence from the first call, whatever each call takes (ticks missed are skipped). */
  sharp?: boolean;
  /** Admission handlers: the operations reviewed; CREATE, UPDATE and DELETE by default. */
  operations?: AdmissionOperation[];
  /** Admission handlers: the subresource reviewed (`status`, `scale`, `*` for all); the object itself by default. */
  subresource?: string;
  /** Admission handlers: the webhook stays configured when the gateway exits. */
  persistent?: boolean;
  /** Admission handlers: the handler acts outside the object, so it must heed `dryRun`. */
  sideEffects?: boolean;
  /** Admission handlers: requests pass when the handler cannot be asked (failurePolicy Ignore). */
  ignoreFailures?: boolean;
  /** The operator's indexes (by id) the handler receives as `indexes`, complete. */
  indexes?: string[];
}

type OptionName = keyof HandlerOptions;

/** Options every kind takes besides those the protocol's table lists for it. */
const SDK_OPTIONS = ['id', 'param'] as const;

/** Kopf's ErrorsMode: how a handler's unexpected errors count. */
export type ErrorsMode = 'temporary' | 'permanent' | 'ignored';
const ERRORS_MODES: readonly ErrorsMode[] = ['temporary', 'permanent', 'ignored'];

/**
 * The kinds that take `errors` (applied in the service, so not published): those that are retried.
 * Not admission handlers (a failure denies the request), nor event handlers (never retried).
 */
const ERRORS_KINDS = [
  'create',
  'update',
  'delete',
  'resume',
  'field',
  'reconcile',
  'timer',
  'daemon',
  'index',
] as const satisfies readonly HandlerKind[];
type ErrorsKind = (typeof ERRORS_KINDS)[number];

type Kinds = typeof HANDLER_KINDS;

/** Checked at registration too, so that plain JavaScript cannot pass an option that would be ignored. */
function optionsOf(kind: HandlerKind): readonly OptionName[] {
  const rule: KindRule = HANDLER_KINDS[kind];
  const errors = (ERRORS_KINDS as readonly HandlerKind[]).includes(kind) ? (['errors'] as const) : [];
  return [...SDK_OPTIONS, ...rule.filters, ...rule.options, ...errors];
}

/** The options `op.on.<kind>` takes. */
export type OptionsOf<Kind extends HandlerKind> = Pick<
  HandlerOptions,
  | (typeof SDK_OPTIONS)[number]
  | (Kind extends ErrorsKind ? 'errors' : never)
  | Kinds[Kind]['filters'][number]
  | Kinds[Kind]['options'][number]
>;

/** `Spec`, `Status` and `Result` type the handler's arguments and result (see Handler). */
export interface Register<Options> {
  <Spec extends object = Fields, Status extends object = Fields, Result = unknown>(
    resource: Resource,
    handler: Handler<Spec, Status, Result>,
  ): void;
  <Spec extends object = Fields, Status extends object = Fields, Result = unknown>(
    resource: Resource,
    options: Options,
    handler: Handler<Spec, Status, Result>,
  ): void;
}

/** Kopf's `on.field(resource, field, options?, handler)`. */
export interface RegisterField<Options> {
  <Spec extends object = Fields, Status extends object = Fields, Result = unknown>(
    resource: Resource,
    field: string,
    handler: Handler<Spec, Status, Result>,
  ): void;
  <Spec extends object = Fields, Status extends object = Fields, Result = unknown>(
    resource: Resource,
    field: string,
    options: Options,
    handler: Handler<Spec, Status, Result>,
  ): void;
}

/**
 * `op.index(resource, options?, fn)`: what `fn` returns for an object is indexed (a plain object or a
 * Map by its keys, anything else under the key null). Or `op.index(resource, { id }, { key, value })`:
 * the gateway reads the key and value of each object itself, with no call.
 */
export interface RegisterIndex<Options> extends Register<Options> {
  (resource: Resource, options: Options & { id: string }, definition: IndexDefinitionOptions): void;
}

/** `op.on.daemon(resource, options?, fn)`: `fn` gets `stopped`, always there for a daemon. */
export interface RegisterDaemon<Options> {
  <Spec extends object = Fields, Status extends object = Fields, Result = unknown>(
    resource: Resource,
    handler: DaemonHandler<Spec, Status, Result>,
  ): void;
  <Spec extends object = Fields, Status extends object = Fields, Result = unknown>(
    resource: Resource,
    options: Options,
    handler: DaemonHandler<Spec, Status, Result>,
  ): void;
}

export type On = {
  [Kind in HandlerKind]: Kind extends 'index'
    ? RegisterIndex<OptionsOf<Kind>>
    : Kind extends 'daemon'
      ? RegisterDaemon<OptionsOf<Kind>>
      : Kinds[Kind] extends { argument: 'field' }
        ? RegisterField<OptionsOf<Kind>>
        : Register<OptionsOf<Kind>>;
};

export interface Registered extends HandlerSpec {
  /** Absent for a declarative index, which the gateway computes without a call. */
  fn?: Handler;
  param: unknown;
  /** Seconds before retrying after an arbitrary error. */
  backoff: number;
  /** What an arbitrary error means; `temporary` when absent. */
  errors?: ErrorsMode;
  /** The filters' callbacks; false means the handler is skipped. Absent when there are none. */
  applies?: (context: HandlerContext) => Promise<boolean>;
}

export interface Registry {
  on: On;
  /** By id, in registration order. */
  handlers: ReadonlyMap<string, Registered>;
}

/** Arbitrary errors are retried, as Kopf does by default (settings.execution.default_backoff). */
export const DEFAULT_BACKOFF_SECONDS = 60;

export function createRegistry(): Registry {
  const handlers = new Map<string, Registered>();
  const register =
    (kind: HandlerKind) =>
    (resource: Resource, ...rest: unknown[]): void => {
      const where = `on.${kind}`;
      const rule: KindRule = HANDLER_KINDS[kind];
      const takesField = rule.argument === 'field';
      let field: string | undefined;
      if (takesField) {
        const argument = rest.shift();
        checkField(where, argument);
        field = argument;
      }
      if (rest.length < 1 || rest.length > 2) {
        throw new TypeError(
          `${where}: expected (resource, ${takesField ? 'field, ' : ''}options?, handler), ` +
            `got ${rest.length + (takesField ? 2 : 1)} arguments`,
        );
      }
      const [given, fn] = rest.length === 1 ? [{}, rest[0]] : rest;
      // An index is a function, or a definition the gateway reads itself.
      const declarative = kind === 'index' && typeof fn === 'object' && fn !== null;
      if (typeof fn !== 'function' && !declarative) {
        throw new TypeError(
          `${where}: the handler must be a function${kind === 'index' ? ', or a { key, value } definition' : ''}`,
        );
      }
      checkOptions(where, kind, given);
      const options: HandlerOptions = field === undefined ? given : { ...given, field };
      const { filters, applies } = compileFilters(where, options);
      const definition = declarative ? indexDefinition(where, fn as IndexDefinitionOptions) : undefined;
      if (declarative && applies) {
        throw new TypeError(
          `${where}: a declarative index is computed by the gateway: it takes no callbacks`,
        );
      }
      const named = typeof fn === 'function' ? fn.name : '';
      const id = checkedId(where, options.id ?? handlerId(named, options.field), handlers, 'handler');
      const specOptions = pick(options, SPEC_OPTIONS);
      handlers.set(id, {
        id,
        kind,
        resource: resourceFor(where, kind, resource),
        ...(filters ? { filters } : {}),
        ...(specOptions ? { options: specOptions } : {}),
        ...(definition ? { index: definition } : {}),
        ...(typeof fn === 'function' ? { fn: fn as Handler } : {}),
        param: options.param,
        backoff: options.backoff ?? DEFAULT_BACKOFF_SECONDS,
        // Kopf's index functions ignore unexpected errors by default: the object's values stay.
        ...(options.errors || kind === 'index' ? { errors: options.errors ?? 'ignored' } : {}),
        ...(applies ? { applies } : {}),
      });
    };
  const on = Object.fromEntries(HANDLER_KIND_NAMES.map((kind) => [kind, register(kind)])) as unknown as On;
  return { on, handlers };
}

/** What the manifest publishes of a handler. */
export function specOf({ id, kind, resource, filters, options, index }: Registered): HandlerSpec {
  return {
    id,
    kind,
    resource,
    ...(filters ? { filters } : {}),
    ...(options ? { options } : {}),
    ...(index ? { index } : {}),
  };
}

function handlerId(name: string, field: string | undefined): string {
  if (!name) return '';
  return field === undefined ? name : `${name}/${field}`;
}

/** The options the manifest publishes (the others stay in the service). */
const SPEC_OPTIONS: readonly (keyof SpecOptions)[] = [
  'retries',
  'timeout',
  'backoff',
  'optional',
  'deleted',
  'interval',
  'idle',
  'initialDelay',
  'sharp',
  'cancellationTimeout',
  'operations',
  'subresource',
  'persistent',
  'sideEffects',
  'ignoreFailures',
  'indexes',
];

/** The options among `names` that are given, or undefined when none is: what a manifest publishes. */
export function pick<T extends object, K extends keyof T>(
  options: T,
  names: readonly K[],
): Pick<T, K> | undefined {
  const picked = Object.fromEntries(
    names.flatMap((name) => (options[name] === undefined ? [] : [[name, options[name]]])),
  ) as Pick<T, K>;
  return Object.keys(picked).length > 0 ? picked : undefined;
}

/** The id a handler is registered under, checked: given or named, as the gateway takes it (HANDLER_ID), not taken. */
export function checkedId(
  where: string,
  id: string,
  taken: ReadonlyMap<string, unknown>,
  noun: 'handler' | 'activity',
): string {
  if (!id) {
    throw new TypeError(
      `${where}: an anonymous handler needs an id: pass { id: '...' } or use a named function`,
    );
  }
  if (!HANDLER_ID.test(id))
    throw new TypeError(`${where}: ${noun} id "${id}" must be ${HANDLER_ID.expected}`);
  if (taken.has(id)) {
    throw new Error(`${where}: ${noun} id "${id}" is already registered; pass a distinct { id: '...' }`);
  }
  return id;
}

/**
 * What every registration checks, a resource handler's or an activity's: an object of `known`
 * options, with a well-formed id, retries, timeout and backoff.
 */
export function checkCommonOptions(
  where: string,
  options: unknown,
  known: readonly string[],
): asserts options is Pick<HandlerOptions, 'id' | 'retries' | 'timeout' | 'backoff'> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(`${where}: options must be an object, got ${String(options)}`);
  }
  for (const name of Object.keys(options)) {
    if (!known.includes(name)) {
      throw new TypeError(`${where}: unknown option "${name}"; known options: ${known.join(', ')}`);
    }
  }
  const { id, retries, timeout, backoff } = options as HandlerOptions;
  if (id !== undefined && (typeof id !== 'string' || id === '')) {
    throw new TypeError(`${where}: option "id" must be a non-empty string`);
  }
  if (retries !== undefined && !OPTIONS.retries.test(retries)) {
    throw new TypeError(`${where}: option "retries" must be a whole number of attempts, at least 1`);
  }
  for (const [name, seconds] of [
    ['timeout', timeout],
    ['backoff', backoff],
  ] as const) {
    const check = OPTIONS[name];
    if (seconds !== undefined && !check.test(seconds)) {
      throw new TypeError(`${where}: option "${name}" must be ${check.expected}`);
    }
  }
}

function checkOptions(where: string, kind: HandlerKind, options: unknown): asserts options is HandlerOptions {
  checkCommonOptions(where, options, optionsOf(kind));
  const { timeout, operations, subresource, indexes, errors } = options as HandlerOptions;
  if (errors !== undefined && !ERRORS_MODES.includes(errors)) {
    throw new TypeError(`${where}: option "errors" must be 'temporary', 'permanent' or 'ignored'`);
  }
  checkIndexesOption(where, indexes);
  if (isAdmissionKind(kind) && timeout !== undefined && !ADMISSION_TIMEOUT.test(timeout)) {
    throw new TypeError(
      `${where}: option "timeout" of an admission handler must be a whole number of seconds, 1 to 30`,
    );
  }
  const { interval, idle, initialDelay, cancellationTimeout } = options as HandlerOptions;
  if (kind === 'timer' && !OPTIONS.interval.test(interval)) {
    throw new TypeError(`${where}: option "interval" must be ${OPTIONS.interval.expected}`);
  }
  for (const [name, seconds] of [
    ['idle', idle],
    ['initialDelay', initialDelay],
    ['cancellationTimeout', cancellationTimeout],
  ] as const) {
    const check = OPTIONS[name];
    if (seconds !== undefined && !check.test(seconds)) {
      throw new TypeError(`${where}: option "${name}" must be ${check.expected}`);
    }
  }
  for (const name of [
    'optional',
    'deleted',
    'sharp',
    'persistent',
    'sideEffects',
    'ignoreFailures',
  ] as const) {
    const flag = (options as HandlerOptions)[name];
    const check = OPTIONS[name];
    if (flag !== undefined && !check.test(flag)) {
      throw new TypeError(`${where}: option "${name}" must be ${check.expected}`);
    }
  }
  if (operations !== undefined && !OPTIONS.operations.test(operations)) {
    throw new TypeError(`${where}: option "operations" must list some of ${ADMISSION_OPERATIONS.join(', ')}`);
  }
  if (subresource !== undefined && !OPTIONS.subresource.test(subresource)) {
    throw new TypeError(`${where}: option "subresource" must be a subresource's name, or '*' for all`);
  }
}
