/**
 * Generated input for the property-based tests (fast-check): JSON trees, odd strings, and Kubernetes
 * objects as the apiserver would hold them (names, labels and annotations within its rules, unicode
 * where it allows any string, large and deeply nested specs). One place, so that every property draws
 * from the same generators.
 */
import fc from 'fast-check';
import type { KubernetesObject, ResourceSelector } from '../../protocol/index.ts';
import { isObject } from '../../protocol/json.ts';

/** Keys that reach an object's prototype when assigned. */
export const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype'];

/** Names of Object.prototype's members, and `__proto__`: as keys of a spec, they are only keys. */
export const PROTOTYPE_MEMBERS = [
  '__proto__',
  'constructor',
  'toString',
  'valueOf',
  'hasOwnProperty',
  'isPrototypeOf',
];

/** Any key but those three: fast-check's strings favour `toString`, `hasOwnProperty` and their like. */
export const benignKey = fc.string({ maxLength: 8 }).filter((key) => !PROTOTYPE_KEYS.includes(key));

/** Strings of any code point (lone surrogates and control characters among them), or of whole graphemes. */
export const oddString = fc.oneof(
  // Not unit 'binary': fast-check maps its whole alphabet (a million code points) back to build strings it favours.
  fc.string({
    unit: fc.integer({ min: 0, max: 0x10ffff }).map((code) => String.fromCodePoint(code)),
    maxLength: 12,
  }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.constantFrom('', ' ', '\n', '\u0000', '\u202e', '🙂', 'e\u0301', '\ud800', 'toString', '__proto__'),
);

/** JSON values, as a reply or a spec holds them, and the objects among them. */
export const { tree: jsonTree, value: jsonValue } = fc.letrec<{
  tree: Record<string, unknown>;
  value: unknown;
}>((tie) => ({
  tree: fc.dictionary(benignKey, tie('value'), { maxKeys: 4, noNullPrototype: true }),
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.oneof(
      fc.constant(null),
      fc.boolean(),
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.string({ maxLength: 8 }),
    ),
    fc.array(tie('value'), { maxLength: 3 }),
    tie('tree'),
  ),
}));

/** `{a: {a: … leaf}}`, `depth` levels deep. */
export function nested(depth: number, leaf: unknown = 1, key = 'a'): Record<string, unknown> {
  let value: unknown = leaf;
  for (let level = 0; level < depth; level++) value = { [key]: value };
  return value as Record<string, unknown>;
}

/** What a spec may be beyond the small trees: unicode keys and values, long strings, wide arrays, deep nesting. */
export const oddSpec: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  jsonTree,
  fc.dictionary(oddString, oddString, { maxKeys: 6, noNullPrototype: true }),
  fc.record({ long: fc.integer({ min: 10_000, max: 100_000 }).map((length) => 'é'.repeat(length)) }),
  fc.record({
    wide: fc.integer({ min: 1000, max: 5000 }).map((length) => Array.from({ length }, (_, i) => i)),
  }),
  fc.integer({ min: 30, max: 90 }).map((depth) => ({ deep: nested(depth) })),
);

/** One character of `alphabet` (mapToConstant: several times faster than constantFrom, which counts). */
const characterOf = (alphabet: string) =>
  fc.mapToConstant({ num: alphabet.length, build: (index) => alphabet[index] as string });
const alphanumeric = characterOf('abcdefghijklmnopqrstuvwxyz0123456789');
/** A DNS-1123 label: lowercase letters, digits and dashes inside, at most 63 characters. */
const dnsLabel = fc
  .tuple(
    alphanumeric,
    fc.string({ unit: characterOf('abcdefghijklmnopqrstuvwxyz0123456789-'), maxLength: 61 }),
    alphanumeric,
  )
  .map(([first, middle, last]) => `${first}${middle}${last}`.slice(0, 63).replace(/-+$/, '') || first);

/** The name of most objects: a DNS-1123 subdomain, dotted labels of at most 253 characters in all. */
export const objectName = fc.array(dnsLabel, { minLength: 1, maxLength: 4 }).map(
  (labels) =>
    labels
      .join('.')
      .slice(0, 253)
      .replace(/[-.]+$/, '') || 'a',
);

const labelCharacter = fc.constantFrom(
  ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.',
);
const labelAlphanumeric = fc.constantFrom(
  ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789',
);
/** A label's value or a key's name part: up to 63 characters, alphanumeric at both ends. */
export const labelValue = fc
  .tuple(labelAlphanumeric, fc.string({ unit: labelCharacter, maxLength: 20 }), labelAlphanumeric)
  .map(([first, middle, last]) => `${first}${middle}${last}`);

/** A label or annotation key: a name, with a DNS subdomain prefix or not. */
export const metadataKey = fc
  .tuple(fc.option(objectName, { nil: undefined }), labelValue)
  .map(([prefix, name]) => (prefix ? `${prefix.slice(0, 200).replace(/[-.]+$/, '')}/${name}` : name));

/**
 * A Kubernetes object of a custom resource, as the apiserver stores it: valid names, odd but valid
 * values; its spec odd (large, deep) unless `spec` says otherwise.
 */
export const kubeObject = (
  options: { apiVersion?: string; kind?: string; spec?: fc.Arbitrary<Record<string, unknown>> } = {},
) =>
  fc
    .record({
      name: objectName,
      uid: fc.uuid(),
      resourceVersion: fc.nat().map(String),
      labels: fc.dictionary(metadataKey, labelValue, { maxKeys: 3, noNullPrototype: true }),
      annotations: fc.dictionary(metadataKey, oddString, { maxKeys: 3, noNullPrototype: true }),
      spec: options.spec ?? oddSpec,
    })
    .map(
      ({ name, uid, resourceVersion, labels, annotations, spec }): KubernetesObject => ({
        apiVersion: options.apiVersion ?? 'kopf.dev/v1',
        kind: options.kind ?? 'KopfExample',
        metadata: { name, namespace: 'default', uid, resourceVersion, labels, annotations },
        spec,
      }),
    );

/** Values of a wrong type for any field: what a mutated reply puts where something else belongs. */
export const wrongValue = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1.5, Number.MAX_SAFE_INTEGER + 2, '', 'x', [], {}, [null], {
    a: 1,
  }),
  oddString,
);

/**
 * Puts `value` at `path` in `tree` (a mutated copy of something well-formed), making the objects on the
 * way; `undefined` deletes the last key instead: a field missing.
 */
export function setAtPath(tree: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let node = tree;
  for (const key of path.slice(0, -1)) {
    if (!isObject(node[key])) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  const last = path.at(-1) as string;
  if (value === undefined) delete node[last];
  else node[last] = value;
}

/**
 * An AdmissionReview v1 as the apiserver sends one: the object after the operation (none for
 * DELETE), the one before it (UPDATE and DELETE), a uid of any text.
 */
export const admissionReview = fc
  .record({
    uid: fc.oneof(
      fc.uuid(),
      oddString.filter((uid) => uid !== ''),
    ),
    operation: fc.constantFrom('CREATE', 'UPDATE', 'DELETE', 'CONNECT'),
    object: kubeObject({ spec: jsonTree }),
    oldSpec: jsonTree,
    userInfo: fc.record(
      { username: oddString, uid: fc.uuid(), groups: fc.array(oddString, { maxLength: 3 }) },
      { requiredKeys: [], noNullPrototype: true },
    ),
    dryRun: fc.option(fc.boolean(), { nil: undefined }),
    subResource: fc.option(fc.constantFrom('status', 'scale'), { nil: undefined }),
  })
  .map(({ operation, object, oldSpec, dryRun, subResource, ...request }) => ({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      ...request,
      operation,
      kind: { group: 'kopf.dev', version: 'v1', kind: 'KopfExample' },
      resource: { group: 'kopf.dev', version: 'v1', resource: 'kopfexamples' },
      name: (object as KubernetesObject).metadata.name,
      namespace: 'default',
      ...(operation === 'DELETE' ? {} : { object }),
      ...(operation === 'UPDATE' || operation === 'DELETE'
        ? { oldObject: { ...object, spec: oldSpec } }
        : {}),
      ...(dryRun === undefined ? {} : { dryRun }),
      ...(subResource === undefined ? {} : { subResource }),
    },
  }));

/** What aggregated discovery may name: resources by a stem, in groups and versions, and categories. */
export const DISCOVERY_NAMES = {
  stems: ['pod', 'node', 'event', 'deployment', 'kopfexample', 'widget'],
  groups: ['', 'apps', 'kopf.dev', 'events.k8s.io', 'metrics.k8s.io'],
  versions: ['v1', 'v2', 'v1beta1'],
  categories: ['all', 'kopf', 'ops'],
};

/**
 * A resource the apiserver serves, in one or more versions of its group: the names kubectl knows it
 * by come from its stem (plural `pods`, singular `pod`, kind `Pod`, short name `pd`), unique within
 * the group as the apiserver keeps them. An aggregated API may leave the singular and the kind out.
 */
export interface ServedFamily {
  group: string;
  stem: string;
  versions: string[];
  namespaced: boolean;
  singular: boolean;
  kind: boolean;
  shortName: boolean;
  categories: string[];
  verbs: string[];
}

/** The names of a family's resource: those aggregated discovery says, empty where it says none. */
export function familyNames(family: ServedFamily) {
  const { stem } = family;
  return {
    plural: `${stem}s`,
    singular: family.singular ? stem : '',
    kind: family.kind ? `${stem[0]?.toUpperCase()}${stem.slice(1)}` : '',
    shortNames: family.shortName ? [`${stem[0]}${stem.at(-1)}`] : [],
  };
}

/**
 * The two documents of aggregated discovery (`/api` and `/apis`, apidiscovery.k8s.io/v2) of generated
 * families, with them and the order the versions are preferred in (the same in every group).
 */
export const aggregatedDiscovery = fc
  .record({
    families: fc.uniqueArray(
      fc.record({
        group: fc.constantFrom(...DISCOVERY_NAMES.groups),
        stem: fc.constantFrom(...DISCOVERY_NAMES.stems),
        versions: fc.subarray(DISCOVERY_NAMES.versions, { minLength: 1 }),
        namespaced: fc.boolean(),
        singular: fc.boolean(),
        kind: fc.boolean(),
        shortName: fc.boolean(),
        categories: fc.subarray(DISCOVERY_NAMES.categories),
        verbs: fc.subarray(['get', 'list', 'watch', 'create']),
      }),
      { selector: ({ group, stem }) => `${stem}.${group}`, maxLength: 10 },
    ),
    versionOrder: fc.shuffledSubarray(DISCOVERY_NAMES.versions, {
      minLength: DISCOVERY_NAMES.versions.length,
    }),
  })
  .map(({ families, versionOrder }) => {
    const listOf = (groups: string[]) => ({
      kind: 'APIGroupDiscoveryList',
      items: groups.map((group) => ({
        metadata: group === '' ? {} : { name: group },
        versions: versionOrder.flatMap((version) => {
          const served = families.filter(
            (family) => family.group === group && family.versions.includes(version),
          );
          if (served.length === 0) return [];
          return [
            {
              version,
              resources: served.map((family) => {
                const { plural, singular, kind, shortNames } = familyNames(family);
                return {
                  resource: plural,
                  scope: family.namespaced ? 'Namespaced' : 'Cluster',
                  verbs: family.verbs,
                  ...(kind ? { responseKind: { group, version, kind } } : {}),
                  ...(singular ? { singularResource: singular } : {}),
                  ...(shortNames.length > 0 ? { shortNames } : {}),
                  ...(family.categories.length > 0 ? { categories: family.categories } : {}),
                };
              }),
            },
          ];
        }),
      })),
    });
    const groups = [...new Set(families.map((family) => family.group))];
    return {
      families,
      versionOrder,
      core: listOf(groups.filter((group) => group === '')),
      named: listOf(groups.filter((group) => group !== '')),
    };
  });

/**
 * A handler's `resource` as a manifest may declare it: a name kubectl takes (plural, singular, kind in
 * any case, short name, with its group after a dot or not), `*`, a category, with a group and a version
 * or not; and names of any text.
 */
export const resourceSelector: fc.Arbitrary<ResourceSelector> = (() => {
  const { stems, groups, versions, categories } = DISCOVERY_NAMES;
  const named = fc
    .tuple(fc.constantFrom(...stems), fc.constantFrom('plural', 'singular', 'kind', 'KIND', 'short'))
    .map(([stem, how]) => {
      const kind = `${stem[0]?.toUpperCase()}${stem.slice(1)}`;
      return {
        plural: `${stem}s`,
        singular: stem,
        kind,
        KIND: kind.toUpperCase(),
        short: `${stem[0]}${stem.at(-1)}`,
      }[how];
    });
  const name = fc.oneof(
    { weight: 4, arbitrary: named },
    {
      weight: 3,
      arbitrary: fc
        .tuple(fc.oneof(named, fc.constantFrom('*', '')), fc.constantFrom(...groups))
        .map(([resource, group]) => `${resource}.${group}`),
    },
    fc.constant('*'),
    oddString,
  );
  const narrowing = { group: fc.constantFrom(...groups), version: fc.constantFrom(...versions) };
  return fc.oneof(
    { weight: 3, arbitrary: fc.record({ name, ...narrowing }, { requiredKeys: ['name'] }) },
    fc.record(
      { category: fc.oneof(fc.constantFrom(...categories), oddString), ...narrowing },
      { requiredKeys: ['category'] },
    ),
  );
})();
