/**
 * The shapes of what the gateway sends (invocation.ts has their types): what invocation-request and
 * invocation-batch.schema.json publish, and what the SDK checks a call with (functions/invocation.ts).
 */
import type {
  AdmissionRequest,
  DueHandler,
  InvocationBatch,
  InvocationRequest,
  ResolvedResource,
  UserInfo,
} from '../invocation.ts';
import { ACTIVITY_KIND_NAMES, ADMISSION_OPERATIONS, HANDLER_KINDS, type KindRule } from '../kinds.ts';
import { PROTOCOL } from '../version.ts';
import {
  anything,
  boolean,
  constant,
  type FieldsOf,
  integer,
  list,
  object,
  oneOfValues,
  record,
  ref,
  schemaDocument,
  shape,
  string,
  tuple,
} from './shape.ts';

/** Every reason a call may have: the causes of the table of kinds, in its order, then the activities. */
const REASONS = [
  ...new Set(
    Object.values(HANDLER_KINDS as Record<string, KindRule>).flatMap((rule) => [
      ...rule.reasons,
      ...Object.keys(rule.reasonsByOption ?? {}),
    ]),
  ),
  ...ACTIVITY_KIND_NAMES,
];

const STOP_REASONS = ['resource-deleted', 'filters-mismatch', 'operator-exiting', 'round-ended', 'cancelled'];

const RESOURCE = object(
  {
    group: string({ description: 'Empty for the core group.' }),
    version: string(),
    plural: string(),
    kind: string(),
    namespaced: boolean(),
  } satisfies FieldsOf<ResolvedResource>,
  { required: ['group', 'version', 'plural', 'kind', 'namespaced'] },
);

const BODY = object(
  {
    apiVersion: string(),
    kind: string(),
    metadata: object({ name: string(), namespace: string(), uid: string() }, { required: ['name', 'uid'] }),
  },
  {
    description: 'The object as the gateway saw it (metadata.managedFields omitted).',
    required: ['apiVersion', 'kind', 'metadata'],
  },
);

const DIFF_ITEM = tuple(
  [
    oneOfValues(['add', 'change', 'remove']),
    list(string()),
    anything({ description: 'The old value; null for add.' }),
    anything({ description: 'The new value; null for remove.' }),
  ],
  { description: '[operation, path (keys from the top), old value, new value].' },
);

/** A due handler; an activity's has its id, retry and started only. */
export const DUE_HANDLER = object(
  {
    id: string(),
    retry: integer({
      minimum: 0,
      description: '0 on the first attempt.',
      expected: 'a non-negative integer',
    }),
    started: string({
      format: 'date-time',
      description: 'Time of the first attempt.',
      expected: 'an ISO 8601 time',
    }),
    idempotencyKey: string({
      description:
        'Resource handlers (required for them): the same for every attempt at the same change of the same object.',
    }),
    old: anything({
      description:
        "Creates and updates: the essence (or, with a field, the field's value) before the change; absent before a creation.",
    }),
    new: anything({
      description: "Creates and updates: the essence (or the field's value) after the change.",
    }),
    diff: list(
      ref('diffItem', () => DIFF_ITEM),
      {
        description: 'Creates and updates: the differences between old and new.',
      },
    ),
    subhandlers: record(
      object({ retry: integer({ minimum: 0 }), done: boolean() }, { required: ['retry', 'done'] }),
      {
        description: 'Sub-handlers this handler ran in earlier attempts, by id.',
      },
    ),
  } satisfies FieldsOf<DueHandler>,
  { required: ['id', 'retry', 'started'] },
);

export const ADMISSION_REQUEST = object(
  {
    uid: string({ description: "The review's uid." }),
    operation: oneOfValues(ADMISSION_OPERATIONS),
    subresource: string({ description: 'The subresource under review; absent for the object itself.' }),
    dryRun: boolean({ description: 'A server-side dry run: nothing is stored.' }),
    userInfo: object(
      {
        username: string(),
        uid: string(),
        groups: list(string()),
        extra: record(),
      } satisfies FieldsOf<UserInfo>,
      {
        description:
          'Who asked for the operation, as the AdmissionReview says: username, uid, groups, extra.',
      },
    ),
  } satisfies FieldsOf<AdmissionRequest>,
  {
    description:
      "Admission handlers: the review. The object under review is body (the old object for a DELETE); for an UPDATE each handler's old, new and diff compare the objects.",
    required: ['uid', 'operation', 'dryRun', 'userInfo'],
  },
);

/** A call about an object, or an activity's (told apart by its reason): their fields together. */
export const INVOCATION_REQUEST = object(
  {
    protocol: constant(PROTOCOL),
    reason: oneOfValues(REASONS, {
      description:
        "Why the handlers are called: a detected cause, a raw watch event, a reconciliation, an admission review, an object to index, or an activity of the gateway's (startup, cleanup, probe, login).",
    }),
    resource: RESOURCE,
    body: BODY,
    handlers: list(DUE_HANDLER, { minItems: 1 }),
    deadline: string({ format: 'date-time', description: 'The gateway stops waiting then.' }),
    traceparent: string({
      pattern: '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$',
      description: "The W3C trace context of the gateway's call, also sent as the traceparent header.",
    }),
    memo: record(undefined, { description: 'What the handlers kept for this object in earlier calls.' }),
    indexVersions: record(string(), {
      description:
        'To a service whose manifest says indexVersions: the version of each index the due handlers declare, by id. An index in indexes is that version, to keep; one left out is the version kept before, or the service answers {protocol, missingIndexes: [ids]} (missing-indexes.schema.json) and is sent the call again with every index whole.',
    }),
    indexes: record(
      list(
        tuple([
          shape(
            { type: ['string', 'null'] },
            (value) => `${value} === null || typeof ${value} === 'string'`,
            'a string or null',
          ),
          list(),
        ]),
      ),
      {
        description:
          'The indexes the due handlers declare (their indexes option), by id, complete: each key with its values, in the order their objects were indexed. To a service whose manifest says indexVersions, only those whose version it may not have yet.',
      },
    ),
    event: oneOfValues(['ADDED', 'MODIFIED', 'DELETED'], {
      description: 'Event handlers: the type of the raw watch event.',
    }),
    stop: oneOfValues(STOP_REASONS, {
      description:
        'Daemons: asks the daemons of these handlers, where they run in the process taking the call, to stop for this reason; answered at once.',
    }),
    stopped: oneOfValues(STOP_REASONS, {
      description:
        'Daemons: a last call of a daemon asked to stop between two of its calls (or as its round ended): its stopped signal is aborted with this reason from the start.',
    }),
    admission: ADMISSION_REQUEST,
  } satisfies FieldsOf<InvocationRequest>,
  { required: ['protocol', 'reason', 'handlers', 'deadline'] },
);

/**
 * What the schema says of calls by their reason: an activity's is about no object, a resource's has
 * one, and a key for each handler. Published only: the SDK tells calls apart by their reason
 * (kinds.ts's isActivityKind) and checks the fields of each on its own.
 */
const BY_REASON = {
  if: {
    type: 'object',
    required: ['reason'],
    properties: { reason: { enum: ACTIVITY_KIND_NAMES } },
  },
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else, never awaited.
  then: {
    description: "An activity's call: no resource, no object; each handler's retry and started only.",
    properties: { resource: false, body: false },
  },
  else: {
    required: ['resource', 'body'],
    properties: {
      handlers: {
        type: 'array',
        items: {
          type: 'object',
          required: ['idempotencyKey'],
          properties: { idempotencyKey: { type: 'string' } },
        },
      },
    },
  },
};

const INVOCATION_BATCH = object(
  {
    protocol: constant(PROTOCOL),
    batch: shape(
      {
        type: 'array',
        items: { $ref: 'https://causeway.dev/schemas/v1/invocation-request.schema.json' },
      },
      (value) => `Array.isArray(${value})`,
      'a list of calls',
    ),
  } satisfies FieldsOf<InvocationBatch>,
  { required: ['protocol', 'batch'] },
);

export const REQUEST_SCHEMAS = {
  'invocation-request': schemaDocument(
    {
      id: 'invocation-request',
      title: 'Causeway invocation request',
      description:
        "POSTed signed to /causeway/v1/invoke: one call per object per processing cycle, carrying every handler due; or one call of an activity's handlers (startup, cleanup, probe, login), about no object.",
    },
    { ...INVOCATION_REQUEST, schema: { ...INVOCATION_REQUEST.schema, ...BY_REASON } },
    { diffItem: DIFF_ITEM },
  ),
  'invocation-batch': schemaDocument(
    {
      id: 'invocation-batch',
      title: 'Causeway invocation batch',
      description:
        "POSTed signed to /causeway/v1/invoke: several calls in one request, answered by a batch response in the same order. The gateway sends the calls of a service's index functions this way, one call (reason index) per object; and, to a service whose manifest says batches, the calls about objects it makes together, admission reviews' included (none of a daemon).",
    },
    INVOCATION_BATCH,
  ),
};
