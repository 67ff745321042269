/**
 * Kopf's filters: what can be said declaratively goes into the manifest, so the gateway checks it and an
 * object that does not match costs no call; callbacks stay here and are run before the handler.
 */
import type { HandlerFilters, MetaMatch, ValueMatch } from '../protocol/index.ts';
import { valueAt } from '../protocol/json.ts';
import { ANNOTATION_KEY, LABEL_KEY, LABEL_MATCH, META_MATCH } from '../protocol/schema/checks.ts';
import type { HandlerContext } from './context.ts';
import { asJson } from './json.ts';

/** Matches when the label, annotation or field is there, whatever its value. */
export const PRESENT: unique symbol = Symbol.for('causeway.dev/PRESENT');
/** Matches when the label, annotation or field is not there. */
export const ABSENT: unique symbol = Symbol.for('causeway.dev/ABSENT');

type Marker = typeof PRESENT | typeof ABSENT;

export type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json };

/** A label's or annotation's value, PRESENT, ABSENT, or a callback given the value (undefined when absent). */
export type MetaFilter = string | Marker | ((value: string | undefined, context: HandlerContext) => boolean);

/** A field's value (compared as JSON), PRESENT, ABSENT, or a callback given the value (undefined when absent). */
export type ValueFilter = Json | Marker | ((value: unknown, context: HandlerContext) => boolean);

export interface FilterOptions {
  labels?: Record<string, MetaFilter>;
  annotations?: Record<string, MetaFilter>;
  /** Dotted path, e.g. `'spec.replicas'`: the handler is about this field; `old`/`new`/`diff` are relative to it. */
  field?: string;
  /** The field's value; for updates, as in Kopf, its value before or after the change. */
  value?: ValueFilter;
  /** Updates only: the field's value before, and after, the change. */
  old?: ValueFilter;
  new?: ValueFilter;
  /** Decides in code, with every kwarg the handler would get. */
  when?: (context: HandlerContext) => boolean | Promise<boolean>;
}

type Check = (context: HandlerContext) => unknown;

export interface CompiledFilters {
  /** The declarative part, for the manifest; undefined when there is none. */
  filters?: HandlerFilters;
  /** The callbacks, all of which must agree for the handler to be called; undefined when there are none. */
  applies?: (context: HandlerContext) => Promise<boolean>;
}

const FIELD = /^[^.]+(\.[^.]+)*$/;

export function checkField(where: string, field: unknown): asserts field is string {
  if (typeof field !== 'string' || !FIELD.test(field)) {
    throw new TypeError(
      `${where}: the field must be a dotted path such as 'spec.replicas', got ${describe(field)}`,
    );
  }
}

/** `where` names the registration (`on.update`) in the errors, which are thrown at registration. */
export function compileFilters(where: string, options: FilterOptions): CompiledFilters {
  const filters: HandlerFilters = {};
  const checks: Check[] = [];

  for (const name of ['labels', 'annotations'] as const) {
    const wanted = options[name];
    if (wanted === undefined) continue;
    if (typeof wanted !== 'object' || wanted === null || Array.isArray(wanted)) {
      throw new TypeError(`${where}: option "${name}" must be an object of keys to filters`);
    }
    const matches: [string, MetaMatch][] = [];
    // The gateway's checks of a manifest (one source, protocol/schema/): a key or value Kubernetes
    // refuses in a selector would have the service refused there.
    const check =
      name === 'labels' ? { key: LABEL_KEY, match: LABEL_MATCH } : { key: ANNOTATION_KEY, match: META_MATCH };
    for (const [key, filter] of Object.entries(wanted)) {
      if (!check.key.test(key)) {
        throw new TypeError(
          `${where}: ${name}[${JSON.stringify(key)}]: the key must be ${check.key.expected}`,
        );
      }
      if (typeof filter === 'string' && !check.match.test(filter)) {
        throw new TypeError(`${where}: ${name}[${JSON.stringify(key)}] must be ${check.match.expected}`);
      }
      if (typeof filter === 'function') {
        checks.push((context) => filter(ownValue(context[name], key), context));
      } else if (typeof filter === 'string') {
        matches.push([key, filter]);
      } else if (filter === PRESENT || filter === ABSENT) {
        matches.push([key, marker(filter)]);
      } else {
        throw new TypeError(
          `${where}: ${name}["${key}"] must be a string, PRESENT, ABSENT or a function, got ${describe(filter)}`,
        );
      }
    }
    if (matches.length > 0) filters[name] = Object.fromEntries(matches);
  }

  const { field } = options;
  if (field !== undefined) {
    checkField(where, field);
    filters.field = field;
  }
  const given = (['value', 'old', 'new'] as const).filter((name) => options[name] !== undefined);
  if (given.length > 0 && field === undefined) {
    throw new TypeError(`${where}: option "${given[0]}" needs a "field" to compare`);
  }
  if (given.includes('value') && given.length > 1) {
    throw new TypeError(`${where}: "value" and "old"/"new" exclude each other; use either`);
  }
  for (const name of given) {
    const filter = options[name];
    if (typeof filter === 'function') {
      // `value` takes the field's value now, or for an update the one before (its `old`, relative to
      // the field); `old` and `new` only concern updates.
      checks.push(
        name === 'value'
          ? (context) =>
              filter(valueAt(context.body, field as string), context) ||
              (context.reason === 'update' && filter(context.old, context))
          : (context) => context.reason !== 'update' || filter(context[name], context),
      );
    } else {
      filters[name] = valueMatch(where, name, filter);
    }
  }

  const { when } = options;
  if (when !== undefined) {
    if (typeof when !== 'function') {
      throw new TypeError(`${where}: option "when" must be a function, got ${describe(when)}`);
    }
    checks.push(when);
  }

  if (checks.length > 0) filters.when = true;
  return {
    ...(Object.keys(filters).length > 0 ? { filters } : {}),
    ...(checks.length > 0 ? { applies: async (context) => everyAgrees(checks, context) } : {}),
  };
}

/** In order, stopping at the first that says no, as Kopf checks `when` after the other filters. */
async function everyAgrees(checks: Check[], context: HandlerContext): Promise<boolean> {
  for (const check of checks) {
    if (!(await check(context))) return false;
  }
  return true;
}

function valueMatch(where: string, name: string, filter: unknown): ValueMatch {
  if (filter === PRESENT || filter === ABSENT) return marker(filter);
  try {
    return { equals: asJson(filter) };
  } catch (error) {
    throw new TypeError(
      `${where}: option "${name}" must be a JSON value, PRESENT, ABSENT or a function: ${(error as Error).message}`,
    );
  }
}

function marker(filter: Marker): { present: true } | { absent: true } {
  return filter === PRESENT ? { present: true } : { absent: true };
}

/** Own keys only: a label named "constructor" must not find Object.prototype.constructor. */
function ownValue(values: Readonly<Record<string, string>>, key: string): string | undefined {
  return Object.hasOwn(values, key) ? values[key] : undefined;
}

function describe(value: unknown): string {
  if (typeof value === 'symbol' || typeof value === 'function' || typeof value === 'bigint') {
    return String(value);
  }
  return JSON.stringify(value) ?? String(value);
}
