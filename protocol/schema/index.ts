/** The published JSON Schemas, by file name (`<name>.schema.json` beside this file), made from the shapes. */
import { MANIFEST_SCHEMA } from './manifest.ts';
import { RESPONSE_SCHEMAS } from './response.ts';
import type { JsonSchema } from './shape.ts';

export const SCHEMAS: Record<string, JsonSchema> = {
  manifest: MANIFEST_SCHEMA,
  ...RESPONSE_SCHEMAS,
};
