/**
 * Checks what function services send back before the gateway acts on it: a malformed answer must
 * produce a clear error, never a half-applied result.
 */
import {
  type ActivitySpec,
  type Effects,
  type HandlerSpec,
  type Health,
  type IndexEntries,
  type InvocationResponse,
  isActivityKind,
  isAdmissionKind,
  isHandlerKind,
  type KubernetesEvent,
  type LogLine,
  type Manifest,
  type ObjectReference,
  type ObjectToApply,
  type Outcome,
  PROTOCOL,
} from '../../protocol/index.ts';
import { isObject } from '../../protocol/json.ts';
import {
  ADMISSION_TIMEOUT,
  ANNOTATION_KEY,
  type Check,
  DENIED,
  EFFECTS,
  EVENT_HEAD,
  FILTERS,
  HANDLER_ID,
  INVOCATION_RESPONSE,
  LABEL_KEY,
  LABEL_MATCH,
  LOG_LINE,
  MANIFEST,
  META_MATCH,
  OBJECT_REFERENCE,
  OBJECT_TO_APPLY,
  OPTIONS,
  RESOURCE_SELECTOR,
  TEMPORARY,
} from '../../protocol/schema/checks.ts';
import { STATUSES } from '../../protocol/schema/response.ts';
import { parseScope } from './scope.ts';

export class ProtocolError extends Error {
  override name = 'ProtocolError';
}

/**
 * What one reply may hold, beside its bytes (settings.calls.maxReplyBytes): far more than an honest
 * handler needs, and little enough that one service cannot flood the gateway's log, the API, or the
 * memory and CPU that the other services' calls need. Over a cap, the call fails.
 */
export const REPLY_LIMITS = {
  /** Log lines in one response: each one is a line of the gateway's log. */
  logLines: 1000,
  /** Characters of a log line's message that the gateway logs; the rest is cut. */
  logMessageChars: 4096,
  /** Events in one response, its handlers' together: each one is a write to the API. */
  events: 100,
  /** Objects to apply in one response, its handlers' together: each one is a write to the API. */
  applyObjects: 100,
  /** Admission warnings in one response: the apiserver hands every one to the client. */
  warnings: 50,
  /** Levels of objects and arrays in a reply: deeper than any Kubernetes object; merges recurse this deep. */
  depth: 100,
} as const;

/** Keys that reach a prototype when assigned to an object: a reply holding one anywhere is refused. */
const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Refuses a whole reply, before any part of it is read, when it holds a key that reaches a prototype or
 * nests too deep, naming where (`response.outcomes.create_fn.patch.__proto__`). Every reply passes
 * here once: the parse functions below check what they are given with it.
 */
function checkReply(value: unknown, root: string): void {
  const found = unsafePart(value, 0);
  if (!found) return;
  const where = found.path.reduceRight<string>((path, key) => `${path}${pathStep(key)}`, root);
  throw new ProtocolError(
    found.problem === 'key'
      ? `${where}: a reply may not hold the key ${JSON.stringify(found.path[0])}, which reaches an object's prototype`
      : `${where}: a reply may not nest deeper than ${REPLY_LIMITS.depth} levels`,
  );
}

/** The first unsafe part of `value`, its path from the innermost key out (built only when found). */
function unsafePart(
  value: unknown,
  depth: number,
): { problem: 'key' | 'depth'; path: (string | number)[] } | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  if (depth >= REPLY_LIMITS.depth) return { problem: 'depth', path: [] };
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = unsafePart(value[index], depth + 1);
      if (found) {
        found.path.push(index);
        return found;
      }
    }
    return undefined;
  }
  for (const key of Object.keys(value)) {
    if (PROTOTYPE_KEYS.has(key)) return { problem: 'key', path: [key] };
    const found = unsafePart((value as Record<string, unknown>)[key], depth + 1);
    if (found) {
      found.path.push(key);
      return found;
    }
  }
  return undefined;
}

function pathStep(key: string | number): string {
  if (typeof key === 'number') return `[${key}]`;
  return /^[A-Za-z_$][\w$-]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

function checkProtocol(value: Record<string, unknown>, what: string): void {
  if (value.protocol !== PROTOCOL) {
    throw new ProtocolError(
      `${what} speaks protocol ${JSON.stringify(value.protocol)}, expected "${PROTOCOL}"`,
    );
  }
}

export function parseHealth(value: unknown): Health {
  checkReply(value, 'health');
  if (!isObject(value)) throw new ProtocolError('health answer is not a JSON object');
  checkProtocol(value, 'health answer');
  if (typeof value.name !== 'string' || !value.name)
    throw new ProtocolError('health answer has no service name');
  return value as unknown as Health;
}

/** Returns the manifest with the handlers this gateway understands, and the kinds it skipped. */
export function parseManifest(value: unknown): { manifest: Manifest; unknownKinds: string[] } {
  checkReply(value, 'manifest');
  if (!isObject(value)) throw new ProtocolError('manifest is not a JSON object');
  checkProtocol(value, 'manifest');
  if (typeof value.name !== 'string' || !value.name) throw new ProtocolError('manifest has no service name');
  if (!MANIFEST.name.test(value.name)) {
    throw new ProtocolError(`manifest.name ${JSON.stringify(value.name)} must be ${MANIFEST.name.expected}`);
  }
  if (!Array.isArray(value.handlers)) throw new ProtocolError('manifest.handlers is not an array');
  const handlers: HandlerSpec[] = [];
  const unknownKinds: string[] = [];
  const ids = new Set<string>();
  for (const [index, handler] of value.handlers.entries()) {
    const where = `manifest.handlers[${index}]`;
    if (!isObject(handler)) throw new ProtocolError(`${where} is not an object`);
    if (typeof handler.id !== 'string' || !handler.id) throw new ProtocolError(`${where}.id is missing`);
    checkId(handler.id, where);
    if (ids.has(handler.id)) throw new ProtocolError(`${where}.id "${handler.id}" is declared twice`);
    ids.add(handler.id);
    checkResource(handler.resource, `${where}.resource`);
    if (handler.filters !== undefined) checkFilters(handler.filters, `${where}.filters`);
    if (handler.options !== undefined) checkOptions(handler.options, `${where}.options`);
    if (!isHandlerKind(handler.kind)) {
      unknownKinds.push(String(handler.kind));
      continue;
    }
    const everything = /^\*(\.|$)/.test(String((handler.resource as { name?: unknown }).name));
    if (isAdmissionKind(handler.kind) && everything) {
      throw new ProtocolError(`${where}: an admission handler cannot review every resource (*)`);
    }
    const timeout = isObject(handler.options) ? handler.options.timeout : undefined;
    if (isAdmissionKind(handler.kind) && timeout !== undefined && !ADMISSION_TIMEOUT.test(timeout)) {
      throw new ProtocolError(
        `${where}.options.timeout of an admission handler must be ${ADMISSION_TIMEOUT.expected}`,
      );
    }
    handlers.push(handler as unknown as HandlerSpec);
  }
  const activities = parseActivities(value.activities, unknownKinds);
  for (const flag of ['sessions', 'indexVersions', 'batches'] as const) {
    if (value[flag] !== undefined && !MANIFEST[flag].test(value[flag])) {
      throw new ProtocolError(`manifest.${flag} is not a boolean`);
    }
  }
  return {
    manifest: {
      protocol: PROTOCOL,
      name: value.name,
      handlers,
      ...(activities.length > 0 ? { activities } : {}),
      ...(value.scope === undefined ? {} : { scope: parseScope(value.scope, 'manifest.scope') }),
      ...(value.sessions === true ? { sessions: true } : {}),
      ...(value.indexVersions === true ? { indexVersions: true } : {}),
      ...(value.batches === true ? { batches: true } : {}),
    },
    unknownKinds,
  };
}

/**
 * An id is a key of the object's status and progress, a metric's label and a webhook's path: of the
 * shape the SDK gives it, and never a key that reaches a prototype.
 */
function checkId(id: string, where: string): void {
  if (!HANDLER_ID.test(id)) {
    throw new ProtocolError(`${where}.id ${JSON.stringify(id.slice(0, 300))} must be ${HANDLER_ID.expected}`);
  }
  if (PROTOTYPE_KEYS.has(id)) {
    throw new ProtocolError(`${where}.id "${id}" may not be a key that reaches an object's prototype`);
  }
}

/** A handler's resources: by name (`*` for every one) or by category, exactly one of them. */
function checkResource(resource: unknown, where: string): void {
  if (!isObject(resource)) throw new ProtocolError(`${where} is not an object`);
  const given = (['name', 'category'] as const).filter((field) => resource[field] !== undefined);
  if (given.length !== 1) {
    throw new ProtocolError(
      `${where} needs a name or a category, ${given.length === 0 ? 'and has neither' : 'not both'}`,
    );
  }
  for (const field of given) {
    if (!RESOURCE_SELECTOR[field].test(resource[field])) {
      throw new ProtocolError(`${where}.${field} must be ${RESOURCE_SELECTOR[field].expected}`);
    }
  }
  for (const field of ['group', 'version'] as const) {
    if (resource[field] !== undefined && !RESOURCE_SELECTOR[field].test(resource[field])) {
      throw new ProtocolError(`${where}.${field} must be ${RESOURCE_SELECTOR[field].expected}`);
    }
  }
}

/**
 * A handler's filters, each of the shape the gateway matches objects with: one that is not would
 * fail the matching of every object of the resource, not only this handler's.
 */
function checkFilters(filters: unknown, where: string): void {
  if (!isObject(filters)) throw new ProtocolError(`${where} is not an object`);
  // Label filters become selectors the apiserver reads (a webhook's objectSelector, a watch's): of the
  // shape it takes, or one service's filter would refuse what others share.
  const metaChecks = {
    labels: { key: LABEL_KEY, match: LABEL_MATCH },
    annotations: { key: ANNOTATION_KEY, match: META_MATCH },
  } as const;
  for (const [part, check] of Object.entries(metaChecks)) {
    const matches = filters[part];
    if (matches === undefined) continue;
    if (!isObject(matches)) throw new ProtocolError(`${where}.${part} is not an object`);
    for (const [key, match] of Object.entries(matches)) {
      const named = `${where}.${part}${pathStep(key.length > 300 ? `${key.slice(0, 300)}…` : key)}`;
      if (!check.key.test(key)) throw new ProtocolError(`${named}: the key must be ${check.key.expected}`);
      if (!check.match.test(match)) throw new ProtocolError(`${named} must be ${check.match.expected}`);
    }
  }
  if (filters.field !== undefined && !FILTERS.field.test(filters.field)) {
    throw new ProtocolError(`${where}.field must be ${FILTERS.field.expected}`);
  }
  for (const part of ['value', 'old', 'new'] as const) {
    if (filters[part] !== undefined && !FILTERS[part].test(filters[part])) {
      throw new ProtocolError(`${where}.${part} must be ${FILTERS[part].expected}`);
    }
  }
  if (filters.when !== undefined && !FILTERS.when.test(filters.when)) {
    throw new ProtocolError(`${where}.when must be ${FILTERS.when.expected}`);
  }
  if (filters.namespaces !== undefined && !isStrings(filters.namespaces, 0)) {
    throw new ProtocolError(`${where}.namespaces must be a list of namespaces, globs or negations`);
  }
}

/** Options of a handler or an activity: those the gateway reads, of the type it reads them as. */
function checkOptions(options: unknown, where: string): void {
  if (!isObject(options)) throw new ProtocolError(`${where} is not an object`);
  const checks: Record<string, Check> = OPTIONS;
  for (const [name, value] of Object.entries(options)) {
    const check = Object.hasOwn(checks, name) ? checks[name] : undefined;
    if (check && value !== undefined && !check.test(value)) {
      throw new ProtocolError(`${where}.${name} must be ${check.expected}`);
    }
  }
}

/** A list of strings, at least `min` of them. */
function isStrings(value: unknown, min: number): boolean {
  return Array.isArray(value) && value.length >= min && value.every((item) => typeof item === 'string');
}

/** The manifest's activities this gateway knows (none when absent); adds the others' kinds to `unknownKinds`. */
function parseActivities(value: unknown, unknownKinds: string[]): ActivitySpec[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ProtocolError('manifest.activities is not an array');
  const activities: ActivitySpec[] = [];
  const ids = new Set<string>();
  for (const [index, activity] of value.entries()) {
    const where = `manifest.activities[${index}]`;
    if (!isObject(activity)) throw new ProtocolError(`${where} is not an object`);
    if (typeof activity.id !== 'string' || !activity.id) throw new ProtocolError(`${where}.id is missing`);
    checkId(activity.id, where);
    if (ids.has(activity.id)) throw new ProtocolError(`${where}.id "${activity.id}" is declared twice`);
    ids.add(activity.id);
    if (activity.options !== undefined) checkOptions(activity.options, `${where}.options`);
    if (!isActivityKind(activity.kind)) {
      unknownKinds.push(`activity ${String(activity.kind)}`);
      continue;
    }
    activities.push(activity as unknown as ActivitySpec);
  }
  return activities;
}

/** `admission`: the answer to an admission review, whose handlers may deny and warn. */
export function parseInvocationResponse(
  value: unknown,
  handlerIds: readonly string[],
  admission = false,
): InvocationResponse {
  checkReply(value, 'response');
  return invocationResponse(value, handlerIds, admission);
}

/** Effects counted over a whole response, against REPLY_LIMITS. */
type EffectCounts = Record<'events' | 'applyObjects' | 'warnings', number>;

function invocationResponse(
  value: unknown,
  handlerIds: readonly string[],
  admission = false,
): InvocationResponse {
  if (!isObject(value)) throw new ProtocolError('response is not a JSON object');
  checkProtocol(value, 'response');
  if (!isObject(value.outcomes)) throw new ProtocolError('response.outcomes is not an object');
  const outcomes: Record<string, Outcome> = {};
  const counts: EffectCounts = { events: 0, applyObjects: 0, warnings: 0 };
  for (const id of handlerIds) {
    const outcome = Object.hasOwn(value.outcomes, id) ? value.outcomes[id] : undefined;
    if (outcome === undefined) throw new ProtocolError(`response has no outcome for handler "${id}"`);
    outcomes[id] = parseOutcome(outcome, `response.outcomes.${id}`, admission, counts);
  }
  const logs: LogLine[] = [];
  if (value.logs !== undefined) {
    if (!Array.isArray(value.logs)) throw new ProtocolError('response.logs is not an array');
    if (value.logs.length > REPLY_LIMITS.logLines) {
      throw new ProtocolError(
        `response.logs holds ${value.logs.length} lines, more than the ${REPLY_LIMITS.logLines} a response may hold`,
      );
    }
    for (const line of value.logs) {
      if (!LOG_LINE.test(line)) {
        throw new ProtocolError(`response.logs has a malformed line: ${JSON.stringify(line).slice(0, 200)}`);
      }
      // What is logged, and no more: its level, its message, and the handler that wrote it.
      const { level, message, handler } = line as unknown as LogLine;
      logs.push({
        level,
        message: cutLogMessage(message),
        ...(handler === undefined ? {} : { handler: cutLogMessage(handler) }),
      });
    }
  }
  if (value.memo !== undefined && !INVOCATION_RESPONSE.memo.test(value.memo))
    throw new ProtocolError('response.memo is not an object');
  return { protocol: PROTOCOL, outcomes, logs, ...(isObject(value.memo) ? { memo: value.memo } : {}) };
}

/** A service's log message (or handler) as the gateway logs it: cut at REPLY_LIMITS.logMessageChars, saying so. */
function cutLogMessage(message: string): string {
  const limit = REPLY_LIMITS.logMessageChars;
  return message.length <= limit
    ? message
    : `${message.slice(0, limit)}… (${message.length - limit} more characters not logged)`;
}

/** Counts `found` more of an effect, failing the response past its cap. */
function count(counts: EffectCounts, effect: keyof EffectCounts, found: number, where: string): void {
  counts[effect] += found;
  if (counts[effect] > REPLY_LIMITS[effect]) {
    throw new ProtocolError(
      `${where}: a response may hold ${REPLY_LIMITS[effect]} ${EFFECT_NAMES[effect]} at most, its handlers' together`,
    );
  }
}

const EFFECT_NAMES: Record<keyof EffectCounts, string> = {
  events: 'events',
  applyObjects: 'objects to apply',
  warnings: 'warnings',
};

/** A batch's answer: one response per call, in order, each with an outcome for each of its handlers. */
/** A batch of index calls answered: a response for each, as none of them names an index by version. */
export interface IndexBatchResponse {
  protocol: typeof PROTOCOL;
  batch: InvocationResponse[];
}

export function parseBatchResponse(
  value: unknown,
  handlerIds: readonly (readonly string[])[],
): IndexBatchResponse {
  const answers = batchAnswers(value, handlerIds.length);
  return {
    protocol: PROTOCOL,
    batch: handlerIds.map((ids, position) => {
      checkReply(answers[position], `batch.batch[${position}]`);
      try {
        return invocationResponse(answers[position], ids);
      } catch (error) {
        throw new ProtocolError(`batch response ${position}: ${(error as Error).message}`);
      }
    }),
  };
}

/**
 * A batch response's answers, one per call, each still to be read (and checked, parseInvocationResponse)
 * as a response: only the envelope around them is checked here, so that none is walked twice.
 */
export function batchAnswers(value: unknown, calls: number): unknown[] {
  if (!isObject(value)) throw new ProtocolError('batch response is not a JSON object');
  const { batch, ...envelope } = value;
  checkReply(envelope, 'batch');
  checkProtocol(value, 'batch response');
  if (!Array.isArray(batch) || batch.length !== calls) {
    throw new ProtocolError(`batch response must hold ${calls} responses, in the order of the calls`);
  }
  return batch;
}

/** An index function's result for one object: a list of [key, value], the key a string or null. */
export function parseIndexEntries(value: unknown, where: string): IndexEntries {
  const wellFormed =
    Array.isArray(value) &&
    value.every(
      (entry) =>
        Array.isArray(entry) && entry.length === 2 && (entry[0] === null || typeof entry[0] === 'string'),
    );
  if (!wellFormed) {
    throw new ProtocolError(
      `${where}: an index result must be a list of [key, value], each key a string or null`,
    );
  }
  return value as IndexEntries;
}

/**
 * An activity's answer: success (a result), temporary or permanent, and no effects, as activities have
 * no object to patch, post events about or apply beside.
 */
export function parseActivityResponse(value: unknown, handlerIds: readonly string[]): InvocationResponse {
  const response = parseInvocationResponse(value, handlerIds);
  for (const [id, outcome] of Object.entries(response.outcomes)) {
    const where = `response.outcomes.${id}`;
    if (!(ACTIVITY_STATUSES as readonly string[]).includes(outcome.status)) {
      throw new ProtocolError(`${where}.status "${outcome.status}" does not answer an activity`);
    }
    const effects = Object.keys(outcome).filter((key) => !OUTCOME_FIELDS.has(key));
    if (effects.length > 0) {
      throw new ProtocolError(`${where} has ${effects.join(', ')}: an activity is about no object`);
    }
  }
  return response;
}

const ACTIVITY_STATUSES = ['success', 'temporary', 'permanent'] as const;
/** What an activity's outcome may hold: its status's fields, no effects. */
const OUTCOME_FIELDS: ReadonlySet<string> = new Set(
  ACTIVITY_STATUSES.flatMap((status) => Object.keys(STATUSES[status].properties)),
);

function parseOutcome(value: unknown, where: string, admission: boolean, counts: EffectCounts): Outcome {
  if (!isObject(value)) throw new ProtocolError(`${where} is not an object`);
  const effects = parseEffects(value, where, admission, counts);
  switch (value.status) {
    case 'success':
      return value.result === undefined
        ? { status: 'success', ...effects }
        : { status: 'success', result: value.result, ...effects };
    case 'temporary':
      if (!TEMPORARY.delay.test(value.delay))
        throw new ProtocolError(`${where}.delay must be ${TEMPORARY.delay.expected}`);
      return {
        status: 'temporary',
        message: failureMessage(value, where),
        delay: value.delay as number,
        ...effects,
      };
    case 'permanent':
      return { status: 'permanent', message: failureMessage(value, where), ...effects };
    case 'skipped':
      return { status: 'skipped', ...effects };
    case 'denied':
      if (!admission) throw new ProtocolError(`${where}.status "denied" answers admission reviews only`);
      if (!DENIED.message.test(value.message) || !DENIED.code.test(value.code)) {
        throw new ProtocolError(`${where}: a denial needs a message and an HTTP code (400 to 599)`);
      }
      return { status: 'denied', message: value.message as string, code: value.code as number, ...effects };
    default:
      throw new ProtocolError(
        `${where}.status ${JSON.stringify(value.status)} is not success, temporary, permanent${admission ? ', skipped or denied' : ' or skipped'}`,
      );
  }
}

/** Why a handler failed: a string, as the schema says, and not whatever else a service sent made one. */
function failureMessage(outcome: Record<string, unknown>, where: string): string {
  const message = TEMPORARY.message;
  if (!message.test(outcome.message)) throw new ProtocolError(`${where}.message must be ${message.expected}`);
  return outcome.message as string;
}

/** What an event is about besides the handled object: an involvedObject, without more than it names. */
function parseReference(value: unknown, where: string): ObjectReference {
  const malformed = () =>
    new ProtocolError(
      `${where} must reference an object: apiVersion, kind and name, and namespace and uid if any, as non-empty strings`,
    );
  if (!OBJECT_REFERENCE.test(value)) throw malformed();
  const { apiVersion, kind, name, namespace, uid } = value as unknown as ObjectReference;
  return {
    apiVersion,
    kind,
    name,
    ...(namespace === undefined ? {} : { namespace }),
    ...(uid === undefined ? {} : { uid }),
  };
}

function parseEffects(
  value: Record<string, unknown>,
  where: string,
  admission: boolean,
  counts: EffectCounts,
): Effects {
  const effects: Effects = {};
  if (value.patch !== undefined) {
    if (!isObject(value.patch)) throw new ProtocolError(`${where}.patch must be ${EFFECTS.patch.expected}`);
    if ('metadata' in value.patch && isObject(value.patch.metadata)) {
      for (const field of ['name', 'namespace', 'uid', 'resourceVersion'] as const) {
        if (field in value.patch.metadata)
          throw new ProtocolError(`${where}.patch may not change metadata.${field}`);
      }
    }
    effects.patch = value.patch;
  }
  if (value.events !== undefined) {
    // The list first, then its length against the cap, then each item: a long list costs no more.
    if (!Array.isArray(value.events)) throw new ProtocolError(`${where}.events must be an array`);
    count(counts, 'events', value.events.length, `${where}.events`);
    effects.events = value.events.map((event, index) => {
      if (!EVENT_HEAD.test(event)) {
        throw new ProtocolError(
          `${where}.events[${index}] needs type Normal or Warning, a reason and a message`,
        );
      }
      const { type, reason, message } = event as KubernetesEvent;
      const parsed: KubernetesEvent = { type, reason, message };
      return event.about === undefined
        ? parsed
        : {
            ...parsed,
            about: parseReference((event as KubernetesEvent).about, `${where}.events[${index}].about`),
          };
    });
  }
  if (value.apply !== undefined) {
    if (!Array.isArray(value.apply)) throw new ProtocolError(`${where}.apply must be an array of objects`);
    count(counts, 'applyObjects', value.apply.length, `${where}.apply`);
    effects.apply = value.apply.map((object, index) => {
      if (!OBJECT_TO_APPLY.test(object)) {
        throw new ProtocolError(
          `${where}.apply[${index}] needs apiVersion, kind and metadata.name (or metadata.generateName)`,
        );
      }
      return object as unknown as ObjectToApply;
    });
  }
  if (value.subhandlers !== undefined) {
    if (!isObject(value.subhandlers)) throw new ProtocolError(`${where}.subhandlers must be an object`);
    effects.subhandlers = Object.fromEntries(
      Object.entries(value.subhandlers).map(([id, outcome]) => [
        id,
        parseOutcome(outcome, `${where}.subhandlers.${id}`, admission, counts),
      ]),
    );
  }
  if (value.requeueAfter !== undefined) {
    const { requeueAfter } = EFFECTS;
    if (!requeueAfter.test(value.requeueAfter))
      throw new ProtocolError(`${where}.requeueAfter must be ${requeueAfter.expected}`);
    effects.requeueAfter = value.requeueAfter as number;
  }
  if (value.roundEnded !== undefined) {
    const { roundEnded } = EFFECTS;
    if (!roundEnded.test(value.roundEnded))
      throw new ProtocolError(`${where}.roundEnded must be ${roundEnded.expected}`);
    effects.roundEnded = value.roundEnded as boolean;
  }
  if (value.warnings !== undefined) {
    if (!admission) throw new ProtocolError(`${where}.warnings answer admission reviews only`);
    const { warnings } = EFFECTS;
    if (!warnings.test(value.warnings))
      throw new ProtocolError(`${where}.warnings must be ${warnings.expected}`);
    count(counts, 'warnings', (value.warnings as string[]).length, `${where}.warnings`);
    effects.warnings = value.warnings as string[];
  }
  return effects;
}
