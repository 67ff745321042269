/**
 * Writes what the protocol's shapes (protocol/schema/*.ts) make: the published JSON Schemas,
 * protocol/schema/<name>.schema.json, and protocol/schema/checks.ts, the shapes' tests as plain
 * functions, each formatted as the repository formats its files. test/protocol/schemas.test.ts fails
 * while a written file differs from what its shapes make.
 *
 *   node deploy/schemas.ts      (npm run schemas)
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CHECKED, SCHEMAS } from '../protocol/schema/index.ts';
import type { CodeOut, Shape } from '../protocol/schema/shape.ts';

const ROOT = new URL('..', import.meta.url).pathname;
/** Biome's line width (biome.json): an object or list that fits in it stays on one line, as Biome keeps it. */
const WIDTH = 110;
export const CHECKS_FILE = join(ROOT, 'protocol/schema/checks.ts');

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

/** checks.ts as Biome formats it. */
export function checksModule(): string {
  return execFileSync(join(ROOT, 'node_modules/.bin/biome'), ['format', `--stdin-file-path=${CHECKS_FILE}`], {
    input: checksSource(CHECKED),
    encoding: 'utf8',
    // Biome's launcher is a Node script of its own: the tests' loader of TypeScript is not for it.
    env: { ...process.env, NODE_OPTIONS: '' },
  });
}

/** The source of a checks module: the tests of `checked`, and the functions and constants they call. */
export function checksSource(checked: typeof CHECKED): string {
  const functions: string[] = [];
  const defined = new Map<object, string>();
  const constants = new Map<string, string>();
  const out: CodeOut = {
    define(key, statements) {
      let name = defined.get(key);
      if (name === undefined) {
        name = `test${defined.size}`;
        defined.set(key, name);
        // Named before its body is made, so a shape that holds itself (an outcome's sub-handlers) calls it.
        const slot = functions.push('') - 1;
        functions[slot] = `function ${name}(value: unknown): boolean {\n${statements('value')}\n}`;
      }
      return name;
    },
    hoist(expression) {
      let name = constants.get(expression);
      if (name === undefined) {
        name = `PATTERN${constants.size}`;
        constants.set(expression, name);
      }
      return name;
    },
  };
  const check = (shape: Shape) =>
    `{ test: (value: unknown): boolean => ${shape.code('value', out)}, expected: ${JSON.stringify(shape.expected)} }`;
  const exported = [
    ...Object.entries(checked.shapes).map(
      ([name, shape]) => `export const ${name}: Check = ${check(shape)};`,
    ),
    ...Object.entries(checked.fields).map(
      ([name, fields]) =>
        `export const ${name} = {\n${Object.entries(fields)
          .map(([field, fieldShape]) => `${field}: ${check(fieldShape)},`)
          .join('\n')}\n} satisfies Record<string, Check>;`,
    ),
  ];
  return [
    '/**',
    " * The tests of the protocol's shapes, written from them by `npm run schemas` (deploy/schemas.ts): do",
    ' * not edit. Each is plain code, as a hand-written check would be.',
    ' */',
    "import { isObject } from '../json.ts';",
    "import { isDelaySeconds } from '../limits.ts';",
    '',
    '/** A test of a value, and what an error says the value must be. */',
    'export interface Check {',
    '  test(value: unknown): boolean;',
    '  expected: string;',
    '}',
    '',
    ...[...constants].map(([expression, name]) => `const ${name} = ${expression};`),
    '',
    ...exported,
    '',
    ...functions,
    '',
  ].join('\n');
}

if (import.meta.main) {
  for (const [name, schema] of Object.entries(SCHEMAS)) {
    writeFileSync(join(ROOT, 'protocol/schema', `${name}.schema.json`), `${formatJson(schema)}\n`);
  }
  writeFileSync(CHECKS_FILE, checksModule());
}
