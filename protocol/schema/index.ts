/**
 * What `npm run schemas` writes from the shapes (deploy/schemas.ts): the published JSON Schemas, by
 * file name (`<name>.schema.json` beside this file), and checks.ts, the tests the checks call.
 */
import {
  ADMISSION_TIMEOUT,
  ANNOTATION_KEY,
  FILTERS,
  HANDLER_ID,
  LABEL_KEY,
  LABEL_MATCH,
  MANIFEST,
  MANIFEST_SCHEMA,
  META_MATCH,
  OPTIONS,
  RESOURCE_SELECTOR,
} from './manifest.ts';
import { ADMISSION_REQUEST, DUE_HANDLER, INVOCATION_REQUEST, REQUEST_SCHEMAS } from './request.ts';
import {
  CREDENTIALS,
  EFFECTS,
  ERROR_RESPONSE,
  EVENT_HEAD,
  INVOCATION_RESPONSE,
  LOG_LINE,
  OBJECT_REFERENCE,
  OBJECT_TO_APPLY,
  RESPONSE_SCHEMAS,
  STATUSES,
} from './response.ts';
import type { JsonSchema, ObjectShape, Shape } from './shape.ts';

export const SCHEMAS: Record<string, JsonSchema> = {
  manifest: MANIFEST_SCHEMA,
  ...RESPONSE_SCHEMAS,
  ...REQUEST_SCHEMAS,
};

/** Some fields of an object's shape. */
function pick<Fields extends Record<string, Shape>>(
  shape: ObjectShape<Fields>,
  ...names: (keyof Fields & string)[]
): Record<string, Shape> {
  return Object.fromEntries(names.map((name) => [name, shape.properties[name] as Shape]));
}

/**
 * The tests in checks.ts: of whole shapes, and of the fields that checks name when they fail, each
 * set under the name of its shape.
 */
export const CHECKED: { shapes: Record<string, Shape>; fields: Record<string, Record<string, Shape>> } = {
  shapes: {
    META_MATCH,
    LABEL_KEY,
    LABEL_MATCH,
    ANNOTATION_KEY,
    HANDLER_ID,
    LOG_LINE,
    EVENT_HEAD,
    OBJECT_REFERENCE,
    OBJECT_TO_APPLY,
    ADMISSION_TIMEOUT,
  },
  fields: {
    OPTIONS: OPTIONS.properties,
    FILTERS: pick(FILTERS, 'field', 'value', 'old', 'new', 'when'),
    RESOURCE_SELECTOR: pick(RESOURCE_SELECTOR, 'name', 'category', 'group', 'version'),
    MANIFEST: pick(MANIFEST, 'name', 'sessions', 'indexVersions', 'batches'),
    INVOCATION_RESPONSE: pick(INVOCATION_RESPONSE, 'memo'),
    EFFECTS: pick(EFFECTS, 'patch', 'requeueAfter', 'roundEnded', 'warnings'),
    TEMPORARY: pick(STATUSES.temporary, 'message', 'delay'),
    DENIED: pick(STATUSES.denied, 'message', 'code'),
    CREDENTIALS: CREDENTIALS.properties,
    ERROR_RESPONSE: pick(ERROR_RESPONSE, 'missingHandlers'),
    INVOCATION_REQUEST: pick(
      INVOCATION_REQUEST,
      'memo',
      'indexes',
      'indexVersions',
      'traceparent',
      'event',
      'stop',
      'stopped',
    ),
    DUE_HANDLER: pick(DUE_HANDLER, 'retry', 'started', 'idempotencyKey'),
    ADMISSION_REQUEST: pick(ADMISSION_REQUEST, 'uid', 'operation', 'dryRun'),
  },
};
