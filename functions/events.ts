/**
 * Kubernetes events a handler posts (Kopf's `kopf.info`, `kopf.warn`, `kopf.event`): about the object
 * handled, or about others it names in `about`. The gateway posts them after the call.
 */
import type { KubernetesEvent, ObjectReference } from '../protocol/index.ts';
import { isObject } from '../protocol/json.ts';

/**
 * An object an event may be about: a whole object (a child handed to `apply`, the handler's `body`,
 * an object read elsewhere) or a reference to one, as Kubernetes' `involvedObject` names it.
 */
export type EventSubject =
  | ObjectReference
  | {
      readonly apiVersion: string;
      readonly kind: string;
      readonly metadata: {
        readonly name?: string;
        readonly namespace?: string;
        readonly uid?: string;
        readonly [key: string]: unknown;
      };
      readonly [key: string]: unknown;
    };

export interface EventOptions {
  /**
   * Post about this object, or about each of these (one event each, none for an empty list), instead
   * of the object handled. Without a namespace, the object is taken for cluster-scoped, unless it is
   * one the gateway applies for this call: its uid, which a child has only once applied, and its
   * namespace then come from the object applied. Events about Events are never posted.
   */
  about?: EventSubject | readonly EventSubject[];
}

/** Kubernetes events about the object being handled, or about others, posted by the gateway after the call. */
export interface Events {
  normal(reason: string, message: string, options?: EventOptions): void;
  warning(reason: string, message: string, options?: EventOptions): void;
}

/** Events that go into `into`, for the outcome. */
export function postingEvents(into: KubernetesEvent[]): Events {
  const post =
    (type: KubernetesEvent['type']) =>
    (reason: string, message: string, options: EventOptions = {}): void => {
      const event: KubernetesEvent = { type, reason: String(reason), message: String(message) };
      const { about } = options ?? {};
      if (about === undefined) {
        into.push(event);
        return;
      }
      const subjects: readonly unknown[] = Array.isArray(about) ? about : [about];
      // Checked before any is posted: a mistake posts nothing rather than some.
      const references = subjects.map((subject) => referenceTo(subject, `events.${type.toLowerCase()}`));
      for (const reference of references) into.push({ ...event, about: reference });
    };
  return { normal: post('Normal'), warning: post('Warning') };
}

/** The reference to a whole object or to a reference, checked; a TypeError says what is missing. */
export function referenceTo(subject: unknown, where: string): ObjectReference {
  const object = isObject(subject) ? subject : {};
  const named = isObject(object.metadata) ? object.metadata : object;
  const { apiVersion, kind } = object;
  const { name, namespace, uid } = named;
  if (!isObject(subject) || !text(apiVersion) || !text(kind) || !text(name)) {
    const unnamed = isObject(subject) && !text(name) && text(named.generateName);
    throw new TypeError(
      unnamed
        ? `${where}: "about" an object with only a generateName: it has no name until it is made; give it one`
        : `${where}: "about" takes objects (or references to them) with an apiVersion, a kind and a name, got ${describe(subject)}`,
    );
  }
  for (const [field, value] of [
    ['namespace', namespace],
    ['uid', uid],
  ] as const) {
    if (value !== undefined && !text(value)) {
      throw new TypeError(`${where}: "about" ${kind} ${name} has a ${field} that is not a non-empty string`);
    }
  }
  return {
    apiVersion,
    kind,
    name,
    ...(namespace === undefined ? {} : { namespace: namespace as string }),
    ...(uid === undefined ? {} : { uid: uid as string }),
  };
}

function text(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

function describe(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, 200) ?? String(value);
  } catch {
    return String(value);
  }
}
