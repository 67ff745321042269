/**
 * A small language for the protocol's shapes, so that each is written once. A shape publishes its JSON
 * Schema, and its test as code: `npm run schemas` (deploy/schemas.ts) writes from them the documents
 * beside this file and checks.ts, the tests as plain functions that the gateway's reply checks and the
 * SDK's request checks call, naming what failed in messages of their own, with `expected`. Tests are
 * written out rather than interpreted so that they cost what hand-written checks cost: every call runs
 * them, and Workers allow no code made at run time.
 *
 * A receiver takes what it can read: a test of `oneOf` takes a value any branch describes, where the
 * schema asks exactly one; an object's test checks the fields it declares, and keys it does not know
 * pass (the schemas' "receivers ignore properties they do not know").
 */
import { delayRange, MAX_DELAY_SECONDS } from '../limits.ts';

export type JsonSchema = { readonly [keyword: string]: unknown };

export interface Shape {
  readonly schema: JsonSchema;
  /** Its test: a TypeScript expression, true when `value` (an expression without side effects) has the shape. */
  readonly code: (value: string, out: CodeOut) => string;
  /** What the shape is, as an error says it after "must be". */
  readonly expected: string;
}

/** Where a test's code puts what it needs beside its expression. */
export interface CodeOut {
  /** A function of `value: unknown` returning a boolean, defined once per key; its name. */
  define(key: object, statements: (value: string) => string): string;
  /** A constant defined once (a RegExp); its name. */
  hoist(expression: string): string;
}

/** An object's shape, its fields at hand for checks that name each one. */
export interface ObjectShape<Fields extends Record<string, Shape> = Record<string, Shape>> extends Shape {
  readonly properties: Fields;
}

/** The fields of a type, each a shape: ties a shape to the TypeScript type it describes. */
export type FieldsOf<T> = { [K in keyof Required<T>]: Shape };

interface Described {
  description?: string;
  /** How errors name it, when not as the kind of shape says. */
  expected?: string;
}

/** A shape from its schema and its test's code: for what the others do not say. */
export function shape(schema: JsonSchema, code: Shape['code'], expected: string): Shape {
  return { schema, code, expected };
}

/** A pattern as a RegExp literal: its slashes escaped, but in a character class, where they need not be. */
function regexLiteral(pattern: string): string {
  let literal = '';
  let inClass = false;
  for (let index = 0; index < pattern.length; index++) {
    const char = pattern[index] as string;
    if (char === '\\') {
      literal += char + (pattern[++index] ?? '');
      continue;
    }
    if (char === '[') inClass = true;
    else if (char === ']') inClass = false;
    literal += char === '/' && !inClass ? '\\/' : char;
  }
  return `/${literal}/`;
}

/** The schema, with its description when there is one. */
function withDescription(schema: JsonSchema, { description }: Described): JsonSchema {
  return description === undefined ? schema : { ...schema, description };
}

/** Any JSON value. */
export function anything(options: Described = {}): Shape {
  return shape(withDescription({}, options), () => 'true', options.expected ?? 'a JSON value');
}

export function string(
  options: Described & {
    minLength?: number;
    maxLength?: number;
    pattern?: string;
    format?: 'date-time';
    examples?: string[];
  } = {},
): Shape {
  const { minLength = 0, maxLength, pattern, format, examples } = options;
  const schema: Record<string, unknown> = { type: 'string' };
  if (minLength > 0) schema.minLength = minLength;
  if (maxLength !== undefined) schema.maxLength = maxLength;
  if (pattern !== undefined) schema.pattern = pattern;
  if (format) schema.format = format;
  if (examples) schema.examples = examples;
  return shape(
    withDescription(schema, options),
    (value, out) =>
      [
        `typeof ${value} === 'string'`,
        ...(minLength > 0 ? [`${value}.length >= ${minLength}`] : []),
        ...(maxLength === undefined ? [] : [`${value}.length <= ${maxLength}`]),
        ...(pattern === undefined ? [] : [`${out.hoist(regexLiteral(pattern))}.test(${value})`]),
        // A time the receiver can read: formats are not checked by every schema validator.
        ...(format ? [`!Number.isNaN(Date.parse(${value}))`] : []),
      ].join(' && '),
    options.expected ?? (minLength > 0 ? 'a non-empty string' : 'a string'),
  );
}

export function boolean(options: Described = {}): Shape {
  return shape(
    withDescription({ type: 'boolean' }, options),
    (value) => `typeof ${value} === 'boolean'`,
    options.expected ?? 'true or false',
  );
}

export function integer(options: Described & { minimum?: number; maximum?: number } = {}): Shape {
  const { minimum, maximum } = options;
  const schema: Record<string, unknown> = { type: 'integer' };
  if (minimum !== undefined) schema.minimum = minimum;
  if (maximum !== undefined) schema.maximum = maximum;
  return shape(
    withDescription(schema, options),
    (value) =>
      [
        `Number.isInteger(${value})`,
        ...(minimum === undefined ? [] : [`(${value} as number) >= ${minimum}`]),
        ...(maximum === undefined ? [] : [`(${value} as number) <= ${maximum}`]),
      ].join(' && '),
    options.expected ?? (minimum === undefined ? 'an integer' : `an integer ≥ ${minimum}`),
  );
}

/** A delay in seconds: from 0 (above 0 if `positive`) to MAX_DELAY_SECONDS, limits.ts's range. */
export function seconds(options: Described & { positive?: boolean } = {}): Shape {
  const positive = options.positive ?? false;
  return shape(
    withDescription(
      {
        type: 'number',
        ...(positive ? { exclusiveMinimum: 0 } : { minimum: 0 }),
        maximum: MAX_DELAY_SECONDS,
      },
      options,
    ),
    (value) => `isDelaySeconds(${value}${positive ? ', { positive: true }' : ''})`,
    options.expected ?? delayRange({ positive }),
  );
}

export function constant(value: string | boolean, options: Described = {}): Shape {
  return shape(
    withDescription({ const: value }, options),
    (given) => `${given} === ${JSON.stringify(value)}`,
    options.expected ?? JSON.stringify(value),
  );
}

/** One of these values. */
export function oneOfValues(values: readonly string[], options: Described = {}): Shape {
  return shape(
    withDescription({ enum: values }, options),
    (value) => `(${values.map((each) => `${value} === ${JSON.stringify(each)}`).join(' || ')})`,
    options.expected ?? `one of ${values.join(', ')}`,
  );
}

export function list(item?: Shape, options: Described & { minItems?: number } = {}): Shape {
  const { minItems = 0 } = options;
  const schema: Record<string, unknown> = { type: 'array' };
  if (item) schema.items = item.schema;
  if (minItems > 0) schema.minItems = minItems;
  const made: Shape = shape(
    withDescription(schema, options),
    (value, out) => {
      const lengthy = minItems > 0 ? ` && ${value}.length >= ${minItems}` : '';
      if (!item) return `Array.isArray(${value})${lengthy}`;
      const test = out.define(made, (list) =>
        [
          `if (!Array.isArray(${list})${minItems > 0 ? ` || ${list}.length < ${minItems}` : ''}) return false;`,
          `for (const item of ${list}) if (!(${item.code('item', out)})) return false;`,
          'return true;',
        ].join('\n'),
      );
      return `${test}(${value})`;
    },
    options.expected ?? 'a list',
  );
  return made;
}

/** A list of exactly these items, in order. */
export function tuple(items: readonly Shape[], options: Described = {}): Shape {
  const made: Shape = shape(
    withDescription(
      {
        type: 'array',
        prefixItems: items.map((item) => item.schema),
        minItems: items.length,
        maxItems: items.length,
        items: false,
      },
      options,
    ),
    (value, out) => {
      const test = out.define(made, (list) =>
        [
          `if (!Array.isArray(${list}) || ${list}.length !== ${items.length}) return false;`,
          ...items.map((_, index) => `const item${index} = ${list}[${index}];`),
          `return ${items.map((item, index) => `(${item.code(`item${index}`, out)})`).join(' && ')};`,
        ].join('\n'),
      );
      return `${test}(${value})`;
    },
    options.expected ?? `a list of ${items.length}`,
  );
  return made;
}

/** An object of any keys (of the shape `keys`, when given), each value of the shape given (any value without one). */
export function record(value?: Shape, options: Described & { keys?: Shape } = {}): Shape {
  const { keys } = options;
  const schema: Record<string, unknown> = { type: 'object' };
  if (keys) schema.propertyNames = keys.schema;
  if (value) schema.additionalProperties = value.schema;
  const made: Shape = shape(
    withDescription(schema, options),
    (given, out) => {
      if (!value && !keys) return `isObject(${given})`;
      const test = out.define(made, (object) =>
        [
          `if (!isObject(${object})) return false;`,
          `for (const key in ${object}) {`,
          `if (!Object.hasOwn(${object}, key)) continue;`,
          ...(keys ? [`if (!(${keys.code('key', out)})) return false;`] : []),
          ...(value
            ? [`const item = ${object}[key];`, `if (!(${value.code('item', out)})) return false;`]
            : []),
          '}',
          'return true;',
        ].join('\n'),
      );
      return `${test}(${given})`;
    },
    options.expected ?? 'an object',
  );
  return made;
}

/**
 * An object with these fields, those `required` present. `closed`: no other key (the schema's
 * additionalProperties false); otherwise keys it does not declare pass.
 */
export function object<Fields extends Record<string, Shape>>(
  properties: Fields,
  options: Described & { required?: readonly (keyof Fields & string)[]; closed?: boolean } = {},
): ObjectShape<Fields> {
  const { required = [], closed = false } = options;
  const schema: Record<string, unknown> = { type: 'object' };
  if (required.length > 0) schema.required = required;
  const names = Object.keys(properties);
  if (names.length > 0) {
    schema.properties = Object.fromEntries(names.map((name) => [name, properties[name]?.schema]));
  }
  if (closed) schema.additionalProperties = false;
  const made: ObjectShape<Fields> = {
    schema: withDescription(schema, options),
    code: (value, out) => {
      const test = out.define(made, (object) =>
        [
          `if (!isObject(${object})) return false;`,
          ...names.map((name, index) => {
            const field = `field${index}`;
            const read = `${object}${/^[A-Za-z_$][\w$]*$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`}`;
            const shaped = (properties[name] as Shape).code(field, out);
            // A field of any value (a success's result) is only looked for when required.
            if (shaped === 'true')
              return required.includes(name) ? `if (${read} === undefined) return false;` : '';
            return [
              `const ${field} = ${read};`,
              required.includes(name)
                ? `if (${field} === undefined || !(${shaped})) return false;`
                : `if (${field} !== undefined && !(${shaped})) return false;`,
            ].join('\n');
          }),
          closed
            ? `return Object.keys(${object}).every((key) => ${names.map((name) => `key === ${JSON.stringify(name)}`).join(' || ')});`
            : 'return true;',
        ].join('\n'),
      );
      return `${test}(${value})`;
    },
    expected: options.expected ?? 'an object',
    properties,
  };
  return made;
}

/** A value of any of these shapes (see the top of the file). */
export function oneOf(branches: readonly Shape[], options: Described & { schema?: JsonSchema } = {}): Shape {
  return shape(
    withDescription({ ...options.schema, oneOf: branches.map((branch) => branch.schema) }, options),
    (value, out) => `(${branches.map((branch) => `(${branch.code(value, out)})`).join(' || ')})`,
    options.expected ?? branches.map((branch) => branch.expected).join(' or '),
  );
}

/** The shape `name` of the document's definitions ($defs), described here if `description`. */
export function ref(name: string, target: () => Shape, options: Described = {}): Shape {
  return {
    schema: withDescription({ $ref: `#/$defs/${name}` }, options),
    code: (value, out) => target().code(value, out),
    get expected() {
      return options.expected ?? target().expected;
    },
  };
}

/** The same shape, described otherwise. */
export function describe<Described extends Shape>(described: Described, description: string): Described {
  return { ...described, schema: { ...described.schema, description } };
}

/** A published document: a shape as the root, the shapes it refers to by name as `$defs`. */
export function schemaDocument(
  head: { id: string; title: string; description: string },
  root: Shape,
  definitions: Record<string, Shape> = {},
): JsonSchema {
  const names = Object.keys(definitions);
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: `https://causeway.dev/schemas/v1/${head.id}.schema.json`,
    title: head.title,
    description: head.description,
    ...root.schema,
    ...(names.length > 0
      ? { $defs: Object.fromEntries(names.map((name) => [name, definitions[name]?.schema])) }
      : {}),
  };
}
