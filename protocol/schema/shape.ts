/**
 * A small language for the protocol's shapes, so that each is written once. A shape publishes its JSON
 * Schema (the documents beside this file are written from them: deploy/schemas.ts) and tests values:
 * the gateway's reply checks and the SDK's request checks call the tests, and name what failed in
 * messages of their own, with `expected`. A test builds nothing and stops at the first mismatch, as
 * it runs on every call.
 *
 * A receiver takes what it can read: a test of `oneOf` takes a value any branch describes, where the
 * schema asks exactly one; an object's test checks the fields it declares, and keys it does not know
 * pass (the schemas' "receivers ignore properties they do not know").
 */
import { isObject } from '../json.ts';
import { delayRange, isDelaySeconds, MAX_DELAY_SECONDS } from '../limits.ts';

export type JsonSchema = { readonly [keyword: string]: unknown };

export interface Shape {
  readonly schema: JsonSchema;
  /** Whether a value read from JSON has this shape. */
  readonly test: (value: unknown) => boolean;
  /** What the shape is, as an error says it after "must be". */
  readonly expected: string;
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

/** A shape from its schema and its test: for what the others do not say. */
export function shape(schema: JsonSchema, test: (value: unknown) => boolean, expected: string): Shape {
  return { schema, test, expected };
}

/** The schema, with its description when there is one. */
function withDescription(schema: JsonSchema, { description }: Described): JsonSchema {
  return description === undefined ? schema : { ...schema, description };
}

/** Any JSON value. */
export function anything(options: Described = {}): Shape {
  return shape(withDescription({}, options), () => true, options.expected ?? 'a JSON value');
}

export function string(
  options: Described & { minLength?: number; pattern?: string; format?: 'date-time' } = {},
): Shape {
  const { minLength = 0, format } = options;
  const pattern = options.pattern === undefined ? undefined : new RegExp(options.pattern);
  const schema: Record<string, unknown> = { type: 'string' };
  if (minLength > 0) schema.minLength = minLength;
  if (options.pattern !== undefined) schema.pattern = options.pattern;
  if (format) schema.format = format;
  return shape(
    withDescription(schema, options),
    (value) =>
      typeof value === 'string' &&
      value.length >= minLength &&
      (!pattern || pattern.test(value)) &&
      // A time the receiver can read: formats are not checked by every schema validator.
      (format !== 'date-time' || !Number.isNaN(Date.parse(value))),
    options.expected ?? (minLength > 0 ? 'a non-empty string' : 'a string'),
  );
}

export function boolean(options: Described = {}): Shape {
  return shape(
    withDescription({ type: 'boolean' }, options),
    (value) => typeof value === 'boolean',
    options.expected ?? 'true or false',
  );
}

export function integer(options: Described & { minimum?: number; maximum?: number } = {}): Shape {
  const { minimum = Number.NEGATIVE_INFINITY, maximum = Number.POSITIVE_INFINITY } = options;
  const schema: Record<string, unknown> = { type: 'integer' };
  if (options.minimum !== undefined) schema.minimum = options.minimum;
  if (options.maximum !== undefined) schema.maximum = options.maximum;
  return shape(
    withDescription(schema, options),
    (value) => Number.isInteger(value) && (value as number) >= minimum && (value as number) <= maximum,
    options.expected ?? `an integer ≥ ${minimum}`,
  );
}

/** A delay in seconds: from 0 (above 0 if `positive`) to MAX_DELAY_SECONDS, as limits.ts says. */
export function seconds(options: Described & { positive?: boolean } = {}): Shape {
  const positive = options.positive ?? false;
  const range = { positive };
  return shape(
    withDescription(
      {
        type: 'number',
        ...(positive ? { exclusiveMinimum: 0 } : { minimum: 0 }),
        maximum: MAX_DELAY_SECONDS,
      },
      options,
    ),
    (value) => isDelaySeconds(value, range),
    options.expected ?? delayRange({ positive }),
  );
}

export function constant(value: string | boolean, options: Described = {}): Shape {
  return shape(
    withDescription({ const: value }, options),
    (given) => given === value,
    options.expected ?? JSON.stringify(value),
  );
}

/** One of these values. */
export function oneOfValues(values: readonly string[], options: Described = {}): Shape {
  return shape(
    withDescription({ enum: values }, options),
    (value) => values.includes(value as string),
    options.expected ?? `one of ${values.join(', ')}`,
  );
}

export function list(item?: Shape, options: Described & { minItems?: number } = {}): Shape {
  const { minItems = 0 } = options;
  const schema: Record<string, unknown> = { type: 'array' };
  if (item) schema.items = item.schema;
  if (minItems > 0) schema.minItems = minItems;
  return shape(
    withDescription(schema, options),
    (value) => {
      if (!Array.isArray(value) || value.length < minItems) return false;
      if (item) for (let index = 0; index < value.length; index++) if (!item.test(value[index])) return false;
      return true;
    },
    options.expected ?? 'a list',
  );
}

/** A list of exactly these items, in order. */
export function tuple(items: readonly Shape[], options: Described = {}): Shape {
  return shape(
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
    (value) =>
      Array.isArray(value) &&
      value.length === items.length &&
      items.every((item, index) => item.test(value[index])),
    options.expected ?? `a list of ${items.length}`,
  );
}

/** An object of any keys, each value of the shape given (any value without one). */
export function record(value?: Shape, options: Described = {}): Shape {
  return shape(
    withDescription(
      value ? { type: 'object', additionalProperties: value.schema } : { type: 'object' },
      options,
    ),
    (given) => {
      if (!isObject(given)) return false;
      if (value)
        for (const key in given) if (Object.hasOwn(given, key) && !value.test(given[key])) return false;
      return true;
    },
    options.expected ?? 'an object',
  );
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
  // One plain loop over plain arrays: a test runs for every field of every reply.
  const tests = names.map((name) => (properties[name] as Shape).test);
  const needed = names.map((name) => required.includes(name));
  const test = (value: unknown): boolean => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
    const fields = value as Record<string, unknown>;
    for (let index = 0; index < names.length; index++) {
      const given = fields[names[index] as string];
      if (given === undefined ? needed[index] : !(tests[index] as Shape['test'])(given)) return false;
    }
    return !closed || Object.keys(fields).every((key) => Object.hasOwn(properties, key));
  };
  return {
    schema: withDescription(schema, options),
    test,
    expected: options.expected ?? 'an object',
    properties,
  };
}

/** A value of any of these shapes (see the top of the file). */
export function oneOf(branches: readonly Shape[], options: Described & { schema?: JsonSchema } = {}): Shape {
  return shape(
    withDescription({ ...options.schema, oneOf: branches.map((branch) => branch.schema) }, options),
    (value) => {
      for (let index = 0; index < branches.length; index++)
        if ((branches[index] as Shape).test(value)) return true;
      return false;
    },
    options.expected ?? branches.map((branch) => branch.expected).join(' or '),
  );
}

/** The shape `name` of the document's definitions ($defs), described here if `description`. */
export function ref(name: string, target: () => Shape, options: Described = {}): Shape {
  let test: Shape['test'] | undefined;
  return {
    schema: withDescription({ $ref: `#/$defs/${name}` }, options),
    // Found at the first test: the target may be defined after the shapes that refer to it.
    test: (value) => {
      test ??= target().test;
      return test(value);
    },
    get expected() {
      return options.expected ?? target().expected;
    },
  };
}

/** The same shape, described otherwise. */
export function describe(described: Shape, description: string): Shape {
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
