/**
 * The shapes of what a function service answers (invocation.ts has their types): what
 * invocation-response, missing-indexes, batch-response and error-response.schema.json publish, and
 * what the gateway checks replies with (gateway/dispatch/validation.ts, beside its caps on size and
 * count), and login results (credentials.ts).
 */
import type {
  BatchResponse,
  Credentials,
  Effects,
  ErrorResponse,
  InvocationResponse,
  KubernetesEvent,
  LogLine,
  MissingIndexes,
  ObjectReference,
  ObjectToApply,
} from '../invocation.ts';
import { PROTOCOL } from '../version.ts';
import {
  anything,
  boolean,
  type CodeOut,
  constant,
  type FieldsOf,
  integer,
  list,
  object,
  oneOfValues,
  record,
  ref,
  type Shape,
  schemaDocument,
  seconds,
  shape,
  string,
} from './shape.ts';

const TEXT = string({ minLength: 1 });

export const OBJECT_REFERENCE = object(
  {
    apiVersion: TEXT,
    kind: TEXT,
    name: TEXT,
    namespace: string({ minLength: 1, description: 'Absent for a cluster-scoped object.' }),
    uid: TEXT,
  } satisfies FieldsOf<ObjectReference>,
  {
    description:
      'The object the event is about when it is not the object handled (its involvedObject). Without a uid, the gateway takes the uid, and the namespace when absent, of the object of this apiVersion, kind and name it applied for the same call, if any.',
    required: ['apiVersion', 'kind', 'name'],
  },
);

/** An event but what it is `about`, which is checked on its own. */
export const EVENT_HEAD = object(
  { type: oneOfValues(['Normal', 'Warning']), reason: string(), message: string() },
  { required: ['type', 'reason', 'message'] },
);

const EVENT = object(
  { ...EVENT_HEAD.properties, about: OBJECT_REFERENCE } satisfies FieldsOf<KubernetesEvent>,
  { required: ['type', 'reason', 'message'] },
);

/** The metadata of an object to apply: it has a name, or a generateName for the gateway to complete. */
const APPLIED_METADATA = shape(
  {
    type: 'object',
    anyOf: [
      { required: ['name'], properties: { name: { type: 'string' } } },
      {
        required: ['generateName'],
        properties: {
          generateName: {
            type: 'string',
            description:
              'Without a name: the gateway adds a suffix that stays the same for the same object, handler and position, so a retry updates the object it made.',
          },
        },
      },
    ],
    properties: { namespace: { type: 'string' } },
  },
  (value) =>
    `isObject(${value}) && (typeof ${value}.name === 'string' || typeof ${value}.generateName === 'string')`,
  'an object with a name or a generateName',
);

export const OBJECT_TO_APPLY = object(
  { apiVersion: string(), kind: string(), metadata: APPLIED_METADATA } satisfies FieldsOf<ObjectToApply>,
  { required: ['apiVersion', 'kind', 'metadata'] },
);

export const EFFECTS = object({
  patch: record(undefined, {
    description: 'A JSON merge patch for the object (status included).',
    expected: 'a JSON merge patch (an object)',
  }),
  events: list(EVENT, { expected: 'an array' }),
  requeueAfter: seconds({
    positive: true,
    description: 'Reconcile handlers: call again after this many seconds even if nothing changes.',
  }),
  apply: list(OBJECT_TO_APPLY, {
    description:
      "Objects for the gateway to create or update with server-side apply (children, for instance). A namespaced one without a namespace goes to the handled object's namespace.",
    expected: 'an array of objects',
  }),
  subhandlers: record(
    ref('outcome', () => OUTCOME),
    { description: "How the sub-handlers the handler ran (Kopf's execute) went, by their id." },
  ),
  warnings: list(string(), {
    description: 'Admission handlers only: warnings for the client that made the request.',
    expected: 'a list of strings',
  }),
  roundEnded: boolean({
    description:
      "Daemons: the handler returned because its call's round ended; the gateway calls it again at once.",
  }),
} satisfies FieldsOf<Effects>);

/** Each status an outcome may have, with what it holds besides effects. */
export const STATUSES = {
  success: object(
    {
      status: constant('success'),
      result: anything({ description: 'Any JSON value; stored under status.<handler id>.' }),
    },
    { required: ['status'] },
  ),
  temporary: object(
    {
      status: constant('temporary'),
      message: string(),
      delay: seconds({ description: 'Seconds until the next attempt.' }),
    },
    { required: ['status', 'message', 'delay'] },
  ),
  permanent: object(
    { status: constant('permanent'), message: string() },
    { required: ['status', 'message'] },
  ),
  skipped: object(
    { status: constant('skipped') },
    {
      required: ['status'],
      description: 'A `when` callback of the service decided the handler does not apply.',
    },
  ),
  denied: object(
    {
      status: constant('denied'),
      message: string({ description: 'Shown to the client that made the request.' }),
      code: integer({ minimum: 400, maximum: 599 }),
    },
    {
      required: ['status', 'message', 'code'],
      description: 'Admission handlers only: the request under review is refused.',
    },
  ),
};

const STATUS_SHAPES: readonly Shape[] = Object.values(STATUSES);

const OUTCOME = shape(
  {
    description: 'What became of one handler, with the effects it asks for (applied whatever the status).',
    allOf: [{ $ref: '#/$defs/effects' }, { oneOf: STATUS_SHAPES.map((status) => status.schema) }],
  },
  (value, out) =>
    `${EFFECTS.code(value, out)} && (${STATUS_SHAPES.map((status) => status.code(value, out)).join(' || ')})`,
  'an outcome',
);

export const LOG_LINE = object(
  {
    level: oneOfValues(['debug', 'info', 'warning', 'error']),
    message: string(),
    handler: string(),
  } satisfies FieldsOf<LogLine>,
  { required: ['level', 'message'] },
);

export const INVOCATION_RESPONSE = object(
  {
    protocol: constant(PROTOCOL),
    outcomes: record(ref('outcome', () => OUTCOME)),
    logs: list(LOG_LINE),
    memo: record(undefined, { description: "Keys to set in the object's memo; null removes a key." }),
  } satisfies FieldsOf<InvocationResponse>,
  { required: ['protocol', 'outcomes', 'logs'] },
);

const PEM = (description: string) => string({ minLength: 1, description });

/** A login activity's result; a token, or a client certificate with its key. */
export const CREDENTIALS = (() => {
  const fields = object(
    {
      server: string({
        pattern: '^https?://[^/]',
        description: "The API server's URL.",
        expected: "the API server's URL, e.g. https://10.0.0.1:6443",
      }),
      token: PEM('A bearer token.'),
      certificateData: PEM('A client certificate (PEM), with keyData.'),
      keyData: PEM("The client certificate's private key (PEM)."),
      caData: PEM("The CA of the server's certificate (PEM)."),
      insecure: boolean({ description: "Skip verifying the server's certificate." }),
      expiration: string({
        format: 'date-time',
        description: 'The gateway logs in again before then.',
        expected: 'an ISO 8601 time',
      }),
    } satisfies FieldsOf<Credentials>,
    {
      required: ['server'],
      description:
        "A login activity's result (the outcome's result): how the gateway reaches the Kubernetes API. PEM texts, not base64.",
    },
  );
  return {
    ...fields,
    schema: {
      ...fields.schema,
      anyOf: [
        { type: 'object', required: ['token'], properties: { token: { type: 'string' } } },
        {
          type: 'object',
          required: ['certificateData'],
          properties: { certificateData: { type: 'string' } },
        },
      ],
      dependentRequired: { certificateData: ['keyData'], keyData: ['certificateData'] },
    },
    code: (value: string, out: CodeOut) =>
      [
        fields.code(value, out),
        `((${value} as Record<string, unknown>).token !== undefined || (${value} as Record<string, unknown>).certificateData !== undefined)`,
        `((${value} as Record<string, unknown>).certificateData === undefined) === ((${value} as Record<string, unknown>).keyData === undefined)`,
      ].join(' && '),
  };
})();

const MISSING_INDEXES = object(
  {
    protocol: constant(PROTOCOL),
    missingIndexes: list(string(), {
      minItems: 1,
      description: 'Ids of indexes the call named by version only.',
    }),
  } satisfies FieldsOf<MissingIndexes>,
  { required: ['protocol', 'missingIndexes'], closed: true },
);

export const ERROR_RESPONSE = object(
  {
    protocol: constant(PROTOCOL),
    error: string({ minLength: 1 }),
    missingHandlers: list(string(), {
      minItems: 1,
      description:
        'With a 400: the ids of the handlers the call named that this service does not have (it was redeployed without them). The gateway reads its manifest again.',
    }),
  } satisfies FieldsOf<ErrorResponse>,
  { required: ['protocol', 'error'] },
);

const BATCH_RESPONSE = object(
  {
    protocol: constant(PROTOCOL),
    batch: list(
      shape(
        {
          oneOf: [
            { $ref: 'https://causeway.dev/schemas/v1/invocation-response.schema.json' },
            { $ref: 'https://causeway.dev/schemas/v1/missing-indexes.schema.json' },
          ],
        },
        (value, out) => `${INVOCATION_RESPONSE.code(value, out)} || ${MISSING_INDEXES.code(value, out)}`,
        'an invocation response or a missing-indexes answer',
      ),
    ),
  } satisfies FieldsOf<BatchResponse>,
  { required: ['protocol', 'batch'] },
);

export const RESPONSE_SCHEMAS = {
  'invocation-response': schemaDocument(
    {
      id: 'invocation-response',
      title: 'Causeway invocation response',
      description: 'The 200 answer to an invocation: one outcome per handler of the request.',
    },
    INVOCATION_RESPONSE,
    { credentials: CREDENTIALS, outcome: OUTCOME, effects: EFFECTS },
  ),
  'missing-indexes': schemaDocument(
    {
      id: 'missing-indexes',
      title: 'Causeway missing indexes',
      description:
        'The 200 answer of a service that keeps indexes to a call naming a version of an index it does not have (any more): no handler ran, and the gateway sends the call again with every index whole.',
    },
    MISSING_INDEXES,
  ),
  'batch-response': schemaDocument(
    {
      id: 'batch-response',
      title: 'Causeway batch response',
      description:
        "The answer to an invocation batch: one invocation response per call, in the order of the calls; or, for a call that named by version an index the service does not have, a missing-indexes answer (that call is then sent again alone, with its indexes whole). An index handler's success carries as its result the object's entries, a list of [key, value] (the key a string or null); no result keeps the object's values.",
    },
    BATCH_RESPONSE,
  ),
  'error-response': schemaDocument(
    {
      id: 'error-response',
      title: 'Causeway error response',
      description: 'The body of every non-2xx answer of a function service.',
    },
    ERROR_RESPONSE,
  ),
};
