/**
 * Kopf's hierarchy helpers, for the children an operator creates: plain functions on plain objects
 * (no API calls). Each takes one object or a list, changes them in place, and returns what it was given.
 */

/** How the helpers see a child: whatever else it holds, its metadata gets these fields. */
interface Child {
  metadata?: {
    name?: string;
    generateName?: string;
    namespace?: string;
    labels?: Record<string, string>;
    ownerReferences?: OwnerReference[];
  };
}

/** What the helpers need of an owner: the handler's `body` will do. */
export interface Owner {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly uid: string;
    readonly namespace?: string;
    readonly labels?: Readonly<Record<string, string>>;
  };
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface OwnerReferenceOptions {
  /** The owner is the managing controller of the child (default true). */
  controller?: boolean;
  /** The owner cannot be deleted (in the foreground) before the child (default true). */
  blockOwnerDeletion?: boolean;
}

export interface LabelOptions {
  /** Dotted paths of templates inside the objects to label too, e.g. `['spec.template']`. */
  nested?: string[];
  /** Overwrite labels the objects already have (by default they are kept). */
  forced?: boolean;
}

export interface NamingOptions {
  /** Use the name as it is, instead of as a prefix for Kubernetes to complete (`generateName`). */
  strict?: boolean;
  /** Rename objects that already have a name or a prefix (by default they are kept). */
  forced?: boolean;
}

export interface NamespaceOptions {
  /** Move objects that already have a namespace (by default they are kept). */
  forced?: boolean;
}

export interface AdoptOptions extends NamingOptions {
  nested?: string[];
}

/** Makes the owner own every object, once: an object that already refers to the owner's uid is left alone. */
export function appendOwnerReference<O extends object | object[]>(
  objects: O,
  owner: Owner,
  { controller = true, blockOwnerDeletion = true }: OwnerReferenceOptions = {},
): O {
  const { apiVersion, kind, metadata } = owner ?? {};
  const { name, uid } = metadata ?? {};
  for (const [what, value] of Object.entries({
    apiVersion,
    kind,
    'metadata.name': name,
    'metadata.uid': uid,
  })) {
    if (typeof value !== 'string' || value === '') {
      throw new TypeError(`appendOwnerReference: the owner has no ${what}`);
    }
  }
  for (const object of each(objects)) {
    const metadata = metadataOf(object);
    metadata.ownerReferences ??= [];
    const references = metadata.ownerReferences;
    if (!references.some((reference) => reference.uid === uid)) {
      references.push({ apiVersion, kind, name, uid, controller, blockOwnerDeletion });
    }
  }
  return objects;
}

/** Adds the labels to every object, and to the templates at the `nested` paths. */
export function label<O extends object | object[]>(
  objects: O,
  labels: Readonly<Record<string, string>>,
  { nested = [], forced = false }: LabelOptions = {},
): O {
  for (const object of each(objects)) {
    for (const target of [object, ...nested.flatMap((path) => templatesAt(object, path))]) {
      const metadata = metadataOf(target);
      metadata.labels ??= {};
      const current = metadata.labels;
      for (const [key, value] of Object.entries(labels ?? {})) {
        if (forced || !Object.hasOwn(current, key)) current[key] = value;
      }
    }
  }
  return objects;
}

/**
 * Names the objects that have neither a name nor a prefix after `name`: as `generateName: <name>-`, for
 * Kubernetes to add a random suffix, or, when `strict`, with exactly `name`.
 */
export function harmonizeNaming<O extends object | object[]>(
  objects: O,
  name: string,
  { strict = false, forced = false }: NamingOptions = {},
): O {
  if (typeof name !== 'string' || name === '') {
    throw new TypeError(`harmonizeNaming: the name must be a non-empty string, got ${String(name)}`);
  }
  for (const object of each(objects)) {
    const metadata = metadataOf(object);
    if (!forced && (metadata.name !== undefined || metadata.generateName !== undefined)) continue;
    if (strict) {
      metadata.name = name;
      delete metadata.generateName;
    } else {
      metadata.generateName = `${name}-`;
      delete metadata.name;
    }
  }
  return objects;
}

/** Puts the objects that have no namespace into `namespace`; nothing to do for an undefined one (cluster scope). */
export function adjustNamespace<O extends object | object[]>(
  objects: O,
  namespace: string | undefined,
  { forced = false }: NamespaceOptions = {},
): O {
  if (namespace === undefined) return objects;
  for (const object of each(objects)) {
    const metadata = metadataOf(object);
    if (forced || metadata.namespace === undefined) metadata.namespace = namespace;
  }
  return objects;
}

/** All of the above with the owner's name, namespace and labels: the children of a handled object. */
export function adopt<O extends object | object[]>(
  objects: O,
  owner: Owner,
  { strict, forced, nested }: AdoptOptions = {},
): O {
  appendOwnerReference(objects, owner);
  harmonizeNaming(objects, owner.metadata.name, { strict, forced });
  adjustNamespace(objects, owner.metadata.namespace, { forced });
  label(objects, owner.metadata.labels ?? {}, { nested, forced });
  return objects;
}

function each(objects: object | object[]): Child[] {
  const list: unknown[] = Array.isArray(objects) ? objects : [objects];
  for (const object of list) {
    if (typeof object !== 'object' || object === null || Array.isArray(object)) {
      throw new TypeError(`expected Kubernetes objects as plain objects, got ${String(object)}`);
    }
  }
  return list as Child[];
}

function metadataOf(object: Child): NonNullable<Child['metadata']> {
  object.metadata ??= {};
  return object.metadata;
}

/** The object at a dotted path, or each object of a list there; nothing when the path leads nowhere. */
function templatesAt(object: Child, path: string): Child[] {
  let current: unknown = object;
  for (const key of path.split('.')) {
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, key)) return [];
    current = (current as Record<string, unknown>)[key];
  }
  const found = Array.isArray(current) ? current : [current];
  return found.filter(
    (item): item is Child => typeof item === 'object' && item !== null && !Array.isArray(item),
  );
}
