/**
 * The manifest's shapes (manifest.ts has its types): what manifest.schema.json publishes, what the
 * gateway checks a served manifest's filters and options with, and what the SDK checks its handlers'
 * options with where they are written.
 */
import { ACTIVITY_KIND_NAMES, ADMISSION_OPERATIONS, HANDLER_KIND_NAMES } from '../kinds.ts';
import type {
  ActivityOptions,
  ActivitySpec,
  HandlerFilters,
  HandlerOptions,
  HandlerSpec,
  IndexDefinition,
  Manifest,
  ServiceScope,
} from '../manifest.ts';
import { PROTOCOL } from '../version.ts';
import {
  boolean,
  type CodeOut,
  constant,
  describe,
  type FieldsOf,
  integer,
  list,
  object,
  oneOf,
  oneOfValues,
  record,
  ref,
  schemaDocument,
  seconds,
  shape,
  string,
} from './shape.ts';

const PRESENT = object({ present: constant(true) }, { required: ['present'] });
const ABSENT = object({ absent: constant(true) }, { required: ['absent'] });

export const META_MATCH = oneOf([string(), PRESENT, ABSENT], {
  description: 'An annotation: this exact value, or only presence or absence.',
  expected: 'a value, {"present": true} or {"absent": true}',
});

/** The name part of a qualified name, as Kubernetes takes it in a label's or annotation's key. */
const QUALIFIED_NAME = '[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?';

/**
 * A label's key as Kubernetes takes it (a qualified name: an optional DNS-subdomain prefix and `/`,
 * then a name of 63 characters at most). Label filters become the objectSelector of a webhook
 * configuration and the selector of a watch: a key the apiserver refuses there would refuse them.
 */
export const LABEL_KEY = string({
  pattern: `^((?=[^/]{1,253}/)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?${QUALIFIED_NAME}$`,
  description: "A label's key: [prefix/]name, the prefix a DNS subdomain, the name 63 characters at most.",
  expected:
    "a label's key ([prefix/]name: a DNS subdomain, then 63 letters, digits, '-', '_' or '.' at most)",
});

/** A label's value as Kubernetes takes it: empty, or 63 characters at most, alphanumeric at both ends. */
const LABEL_VALUE = string({
  pattern: `^(${QUALIFIED_NAME})?$`,
  expected: "a label's value (63 letters, digits, '-', '_' or '.' at most, a letter or digit at each end)",
});

/** A label filter: a value a label can have, or only presence or absence. */
export const LABEL_MATCH = oneOf([LABEL_VALUE, PRESENT, ABSENT], {
  description: 'A label: this exact value, or only presence or absence.',
  expected: `${LABEL_VALUE.expected}, {"present": true} or {"absent": true}`,
});

/** An annotation's key as Kubernetes takes it: a label's, but its prefix in either case. */
export const ANNOTATION_KEY = string({
  pattern: `^((?=[^/]{1,253}/)[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*/)?${QUALIFIED_NAME}$`,
  description:
    "An annotation's key: [prefix/]name, the prefix a DNS subdomain, the name 63 characters at most.",
  expected:
    "an annotation's key ([prefix/]name: a DNS subdomain, then 63 letters, digits, '-', '_' or '.' at most)",
});

/**
 * A handler's or an activity's id: a key of the object's status and the gateway's progress, a label of
 * its metrics and part of its webhook's path, so a word without whitespace, of a bounded length.
 */
export const HANDLER_ID = string({
  minLength: 1,
  maxLength: 253,
  pattern: '^\\S+$',
  expected: 'a word of 1 to 253 characters, without whitespace',
});

const VALUE_MATCH = oneOf(
  [
    shape(
      {
        type: 'object',
        required: ['equals'],
        properties: { equals: { description: 'Any JSON value, compared deeply.' } },
      },
      (value) => `isObject(${value}) && Object.hasOwn(${value}, 'equals')`,
      '{"equals": …}',
    ),
    PRESENT,
    ABSENT,
  ],
  {
    description: 'A field: equal to this JSON value, or only presence or absence.',
    expected: '{"equals": …}, {"present": true} or {"absent": true}',
  },
);

/** The filters a service declares (not `namespaces`: the gateway's, from the service's scope). */
export const FILTERS = object(
  {
    labels: record(
      ref('labelMatch', () => LABEL_MATCH),
      { keys: ref('labelKey', () => LABEL_KEY) },
    ),
    annotations: record(
      ref('metaMatch', () => META_MATCH),
      { keys: ref('annotationKey', () => ANNOTATION_KEY) },
    ),
    field: string({
      pattern: '^[^.]+(\\.[^.]+)*$',
      description:
        'Dotted path the handler is about: updates elsewhere do not concern it; old/new/diff are relative to it.',
      expected: 'a dotted path (spec.a.b)',
    }),
    value: ref('valueMatch', () => VALUE_MATCH, { description: "The field's current value." }),
    old: ref('valueMatch', () => VALUE_MATCH, {
      description: "Updates only: the field's value before the change.",
    }),
    new: ref('valueMatch', () => VALUE_MATCH, {
      description: "Updates only: the field's value after the change.",
    }),
    when: boolean({ description: 'The service also decides in code, and may answer the outcome `skipped`.' }),
  } satisfies FieldsOf<Omit<HandlerFilters, 'namespaces'>>,
  {
    description:
      'Checked by the gateway: an object that does not match costs no call. Absent when there are none.',
  },
);

const INDEX_IDS = list(string({ minLength: 1 }), {
  description:
    "The service's indexes (by id) the handler receives, complete: after a start, its calls wait until every listed object is indexed.",
  expected: 'a list of index ids',
});

/**
 * How long the apiserver waits for an admission handler's webhook: whole seconds, 1 to 30, as the
 * webhook configuration every service shares takes them (one out of range refuses all of them).
 */
export const ADMISSION_TIMEOUT = integer({
  minimum: 1,
  maximum: 30,
  description: 'Admission handlers: the seconds the apiserver waits for the webhook.',
  expected: 'a whole number of seconds, 1 to 30',
});

/** Options as numbers of seconds (MAX_DELAY_SECONDS at most), counts, switches and names. */
export const OPTIONS = object(
  {
    retries: integer({
      minimum: 1,
      description: 'Attempts before the handler is given up as a permanent failure.',
    }),
    timeout: seconds({
      positive: true,
      description:
        'Seconds since the first attempt before the handler is given up; admission handlers: how long the apiserver waits for the webhook (1 to 30).',
    }),
    backoff: seconds({
      description: 'Seconds before retrying after an unexpected error; the service applies it (default 60).',
    }),
    optional: boolean({ description: 'Delete handlers: no finalizer is added for it.' }),
    deleted: boolean({ description: 'Resume handlers: also for objects already being deleted.' }),
    interval: seconds({
      positive: true,
      description: 'Timers: seconds between calls (required for timers).',
    }),
    idle: seconds({
      description: 'Timers: called only once the object has not changed for this many seconds.',
    }),
    initialDelay: seconds({
      description: 'Timers and daemons: seconds from the first sight of a matching object to the first call.',
    }),
    cancellationTimeout: seconds({
      description: 'Daemons: seconds a daemon asked to stop has to return before its call is cut off.',
    }),
    sharp: boolean({
      description: 'Timers: the cadence is kept from the first call, whatever each call takes.',
    }),
    operations: list(oneOfValues(ADMISSION_OPERATIONS), {
      minItems: 1,
      description: 'Admission handlers: the operations reviewed (default CREATE, UPDATE, DELETE).',
      expected: 'a list of CREATE, UPDATE, DELETE and CONNECT',
    }),
    subresource: string({
      minLength: 1,
      // Written into the webhook configuration's rules, shared by every service: one the apiserver
      // refuses there would refuse every service's webhooks.
      pattern: '^(\\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$',
      expected: "a subresource's name (status, scale), or * for all",
      description:
        'Admission handlers: the subresource reviewed (status, scale, * for all); the object itself when absent.',
    }),
    persistent: boolean({
      description: 'Admission handlers: the webhook stays configured when the gateway exits.',
    }),
    sideEffects: boolean({
      description:
        'Admission handlers: the handler acts outside the object, so it heeds dryRun (sideEffects NoneOnDryRun).',
    }),
    ignoreFailures: boolean({
      description: 'Admission handlers: requests pass when the webhook cannot answer (failurePolicy Ignore).',
    }),
    indexes: INDEX_IDS,
  } satisfies FieldsOf<HandlerOptions>,
  { description: 'Absent when there are none.' },
);

const ACTIVITY_OPTIONS = object(
  {
    retries: describe(
      OPTIONS.properties.retries,
      "Attempts before the activity's handler is given up as a permanent failure.",
    ),
    timeout: describe(
      OPTIONS.properties.timeout,
      'Seconds since the first attempt before the handler is given up; probes: how long one call may take.',
    ),
    backoff: OPTIONS.properties.backoff,
    indexes: INDEX_IDS,
  } satisfies FieldsOf<ActivityOptions>,
  { description: 'Absent when there are none. Probes take only timeout and indexes.' },
);

const OBJECT_PART = oneOf(
  (['field', 'label', 'annotation'] as const).map((part) =>
    object({ [part]: string({ minLength: 1 }) }, { required: [part], closed: true }),
  ),
  {
    description:
      'What a declarative index reads of an object: a field (a dotted path), a label or an annotation.',
  },
);

const INDEX_DEFINITION = object(
  {
    key: list(
      ref('objectPart', () => OBJECT_PART),
      {
        description:
          "The parts whose values, joined with /, are an object's key; an object lacking one is not indexed. Absent: every object under the key null.",
      },
    ),
    value: oneOf([ref('objectPart', () => OBJECT_PART), list(ref('objectPart', () => OBJECT_PART))], {
      description:
        "One part's value, or a list of the parts' values (null where missing). Absent: the object's name, as namespace/name when it has a namespace.",
    }),
  } satisfies FieldsOf<IndexDefinition>,
  {
    description:
      "Index handlers: the gateway computes the index from this definition, with no call. Absent: the service's function computes it.",
    closed: true,
  },
);

/** A resource by name (`*` for every one) or by category, exactly one of them. */
export const RESOURCE_SELECTOR = (() => {
  const narrowing = object({
    group: string({ description: 'The API group; empty for the core group.' }),
    version: string(),
  });
  const byName = object(
    {
      name: string({
        minLength: 1,
        description:
          "Plural, singular, kind or short name, or plural.group; * (Kopf's EVERYTHING) for every resource that can be listed and watched, Events excepted.",
      }),
    },
    { required: ['name'] },
  );
  const byCategory = object(
    {
      category: string({
        minLength: 1,
        description:
          'Every resource in this category (kubectl get <category>: all, or one CRDs list in spec.names.categories) that can be listed and watched, each in its preferred version unless version says; those that join it later too.',
      }),
    },
    { required: ['category'] },
  );
  const branches = oneOf([byName, byCategory], {
    schema: narrowing.schema,
    description:
      'The resources a handler is for: one by name, or several by category (or *, every one), which the gateway finds through API discovery; group and version narrow it down.',
  });
  return {
    ...branches,
    // Exactly one: both would leave which resources it means to chance.
    code: (value: string, out: CodeOut) =>
      `${narrowing.code(value, out)} && (${byName.code(value, out)}) !== (${byCategory.code(value, out)})`,
    properties: { ...byName.properties, ...byCategory.properties, ...narrowing.properties },
  };
})();

const HANDLER = object(
  {
    id: describe(HANDLER_ID, 'Unique in the service; results go to status.<id>.'),
    kind: string({
      description:
        'The cause the handler is for: create, update, delete, resume, field (the field changed: created or updated), event (every watch event), reconcile (the current state, after any change), timer (every interval while the object exists), daemon (one long call while the object exists), validate or mutate (admission reviews), index (an in-memory index of the objects). A gateway skips kinds it does not know, with a warning.',
      examples: HANDLER_KIND_NAMES,
    }),
    resource: ref('resourceSelector', () => RESOURCE_SELECTOR),
    filters: ref('filters', () => FILTERS),
    options: ref('options', () => OPTIONS),
    index: ref('indexDefinition', () => INDEX_DEFINITION),
  } satisfies FieldsOf<HandlerSpec>,
  { required: ['id', 'kind', 'resource'] },
);

const ACTIVITY = object(
  {
    id: describe(HANDLER_ID, "Unique among the service's activities."),
    kind: string({
      description:
        'When the gateway calls it: startup (before it watches anything; a failure fails the start), cleanup (as it stops), probe (for its liveness endpoint; the result is reported there), login (for its credentials to the Kubernetes API, where it is told to log in through this service). A gateway skips kinds it does not know, with a warning.',
      examples: ACTIVITY_KIND_NAMES,
    }),
    options: ref('activityOptions', () => ACTIVITY_OPTIONS),
  } satisfies FieldsOf<ActivitySpec>,
  { required: ['id', 'kind'] },
);

const RESOURCE_NAMES = list(string({ minLength: 1 }));

/** `<namespace>/<name>` of a ServiceAccount: a DNS label, and a DNS subdomain. */
export const SERVICE_ACCOUNT_PATTERN =
  '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$';

const SCOPE = object(
  {
    resources: describe(
      RESOURCE_NAMES,
      'What its handlers may watch, be sent and patch; * is every resource.',
    ),
    admission: describe(RESOURCE_NAMES, 'What its admission handlers may review; none when absent.'),
    children: describe(
      RESOURCE_NAMES,
      'The kinds its apply may create or update, as children of the handled object in its namespace.',
    ),
    namespaces: describe(
      RESOURCE_NAMES,
      'Narrows the namespaces its handlers see: names, globs (team-*), negations (!kube-*).',
    ),
    serviceAccount: string({
      minLength: 1,
      description: 'The ServiceAccount the pods of its children may run as; default when absent.',
    }),
    secrets: describe(
      RESOURCE_NAMES,
      "The Secrets, by name, the pods of its children may mount or reference (in the handled object's namespace); none when absent.",
    ),
    impersonate: string({
      pattern: SERVICE_ACCOUNT_PATTERN,
      description:
        "<namespace>/<name>: the ServiceAccount a gateway run with --impersonate writes its children and events as (default: the service's name, in its FunctionService's namespace or the gateway's).",
    }),
  } satisfies FieldsOf<ServiceScope>,
  {
    description:
      'What the service needs the gateway to reach for it, each resource as kubectl names it with its group (kopfexamples.kopf.dev, deployments.apps; configmaps for the core group). A gateway never serves a service beyond the scope its operator pinned, and refuses a manifest whose declared scope exceeds that pin.',
    required: ['resources'],
    closed: true,
  },
);

export const MANIFEST = object(
  {
    protocol: constant(PROTOCOL),
    name: string({
      pattern: '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$',
      description: "The service's name; every signed request to it carries it as the audience.",
      expected:
        'a DNS-1123 label: up to 63 lowercase letters, digits and "-", starting and ending with a letter or digit',
    }),
    handlers: list(ref('handler', () => HANDLER)),
    activities: list(
      ref('activity', () => ACTIVITY),
      {
        description:
          "The service's activities, handlers about no resource that the gateway calls at moments of its own life; absent when there are none.",
      },
    ),
    scope: ref('scope', () => SCOPE),
    sessions: boolean({
      description:
        "The service takes calls in a session (the causeway-session header) where it checks the gateway's public keys: the gateway proves itself with its Ed25519 key once per session and signs each call HS256 with the session's key. Absent or false: every call carries a signature of the gateway's own.",
      expected: 'a boolean',
    }),
    indexVersions: boolean({
      description:
        "The service keeps the indexes it is sent, by version: calls may name an index's version (indexVersions) without its contents while it does not change.",
      expected: 'a boolean',
    }),
    batches: boolean({
      description:
        "The service takes any calls about objects in a batch (an invocation batch), admission reviews' included and daemons' aside, and runs a batch's calls at once: the gateway may send calls it makes together in one request. Absent or false: it is sent batches of index calls only.",
      expected: 'a boolean',
    }),
  } satisfies FieldsOf<Manifest>,
  { required: ['protocol', 'name', 'handlers'] },
);

export const MANIFEST_SCHEMA = schemaDocument(
  {
    id: 'manifest',
    title: 'Causeway function service manifest',
    description: 'Served signed at GET /causeway/v1/manifest. Receivers ignore properties they do not know.',
  },
  MANIFEST,
  {
    scope: SCOPE,
    activity: ACTIVITY,
    activityOptions: ACTIVITY_OPTIONS,
    handler: HANDLER,
    indexDefinition: INDEX_DEFINITION,
    objectPart: OBJECT_PART,
    resourceSelector: RESOURCE_SELECTOR,
    filters: FILTERS,
    labelKey: LABEL_KEY,
    labelMatch: LABEL_MATCH,
    annotationKey: ANNOTATION_KEY,
    metaMatch: META_MATCH,
    valueMatch: VALUE_MATCH,
    options: OPTIONS,
  },
);
