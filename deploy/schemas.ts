/**
 * Writes the published JSON Schemas, protocol/schema/<name>.schema.json, from the shapes they are made
 * of (protocol/schema/*.ts), formatted as the repository formats JSON. test/protocol/schemas.test.ts
 * fails while a written one differs from its shapes.
 *
 *   node deploy/schemas.ts      (npm run schemas)
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SCHEMAS } from '../protocol/schema/index.ts';

const ROOT = new URL('..', import.meta.url).pathname;
/** Biome's line width (biome.json): an object or list that fits in it stays on one line, as Biome keeps it. */
const WIDTH = 110;

/** `value` as JSON indented by two spaces, each object and list on one line where it fits. */
export function formatJson(value: unknown, indent = '', room = WIDTH - indent.length): string {
  const line = oneLine(value);
  if (typeof value !== 'object' || value === null || line.length <= room) return line;
  const inner = `${indent}  `;
  const entries = Array.isArray(value)
    ? value.map((item) => `${inner}${formatJson(item, inner, WIDTH - inner.length - 1)}`)
    : Object.entries(value).map(([key, item]) => {
        const head = `${inner}${JSON.stringify(key)}: `;
        return `${head}${formatJson(item, inner, WIDTH - head.length - 1)}`;
      });
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  return `${open}\n${entries.join(',\n')}\n${indent}${close}`;
}

/** Biome's one-line form: `{ "a": [1, 2] }`. */
function oneLine(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(oneLine).join(', ')}]`;
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  const entries = Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}: ${oneLine(item)}`);
  return entries.length === 0 ? '{}' : `{ ${entries.join(', ')} }`;
}

if (import.meta.main) {
  for (const [name, schema] of Object.entries(SCHEMAS)) {
    writeFileSync(join(ROOT, 'protocol/schema', `${name}.schema.json`), `${formatJson(schema)}\n`);
  }
}
