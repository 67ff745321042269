/**
 * A shape's test, written out as checks.ts holds it, takes what its JSON Schema takes (Ajv) and refuses
 * what it refuses, but where a receiver is lenient on purpose (shape.ts's header).
 */
import assert from 'node:assert/strict';
import { stripTypeScriptTypes } from 'node:module';
import { describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { checksSource } from '../../deploy/schemas.ts';
import { isObject } from '../json.ts';
import { isDelaySeconds } from '../limits.ts';
import {
  boolean,
  constant,
  integer,
  list,
  object,
  oneOf,
  oneOfValues,
  record,
  ref,
  type Shape,
  schemaDocument,
  seconds,
  string,
  tuple,
} from './shape.ts';

const ajv = new Ajv2020({ strict: true, validateFormats: false });

/** The shape's test as checks.ts would hold it, made a function here. */
function written(shape: Shape): (value: unknown) => boolean {
  const source = checksSource({ shapes: { SHAPE: shape }, fields: {} })
    .replace(/^import .*$/gm, '')
    .replace(/^export /gm, '');
  const body = `${stripTypeScriptTypes(source)}\nreturn SHAPE.test;`;
  return new Function('isObject', 'isDelaySeconds', body)(isObject, isDelaySeconds);
}

let documents = 0;

/** Each value is taken by the written test exactly when the schema takes it. */
function agree(shape: Shape, values: unknown[], definitions: Record<string, Shape> = {}): void {
  const test = written(shape);
  const id = `shape-test-${++documents}`;
  const schema = ajv.compile(schemaDocument({ id, title: id, description: id }, shape, definitions));
  for (const value of values) {
    assert.equal(
      test(value),
      schema(value),
      `${JSON.stringify(value)} against ${JSON.stringify(shape.schema)}`,
    );
  }
}

describe('shapes', () => {
  it('test strings by length and pattern, slashes included, as their schema does', () => {
    agree(string({ minLength: 1 }), ['a', '', 1, null, ['a']]);
    agree(string({ pattern: '^https?://[^/]' }), ['https://a', 'http://10.0.0.1', 'https:///', 'ftp://a', 3]);
    agree(string({ pattern: '^[^.]+(\\.[^.]+)*$' }), ['spec', 'spec.a.b', 'spec..a', '.spec', 'spec.']);
  });

  it('refuse a time no date can be read from, which a schema validator may not check', () => {
    const time = written(string({ format: 'date-time' }));
    assert.equal(time('2026-12-07T18:00:00.000Z'), true);
    assert.equal(time('yesterday'), false);
  });

  it('test numbers, booleans, constants and enums as their schema does', () => {
    agree(integer({ minimum: 400, maximum: 599 }), [400, 599, 399, 600, 401.5, '400', null]);
    agree(seconds({ positive: true }), [1, 0.5, 31536000, 0, -1, 31536001, Number.NaN, '1']);
    agree(seconds(), [0, 31536000, -0.5, 31536001, true]);
    agree(boolean(), [true, false, 0, 'true']);
    agree(constant('causeway.dev/v1'), ['causeway.dev/v1', 'causeway.dev/v2', undefined]);
    agree(oneOfValues(['ADDED', 'MODIFIED']), ['ADDED', 'MODIFIED', 'DELETED', 1]);
  });

  it('test lists, tuples and records item by item, as their schema does', () => {
    agree(list(string(), { minItems: 1 }), [['a'], ['a', 'b'], [], [1], 'a', { 0: 'a' }]);
    agree(list(), [[], [1, 'a'], {}]);
    agree(tuple([oneOfValues(['add']), list(string())]), [
      ['add', ['a']],
      ['add'],
      ['add', ['a'], 1],
      ['move', []],
      { 0: 'add', 1: [] },
    ]);
    agree(record(integer({ minimum: 0 })), [{}, { a: 1 }, { a: -1 }, [], null, 'a']);
    agree(record(), [{}, { a: [] }, [], 1]);
  });

  it('test objects by their fields, required and closed, as their schema does', () => {
    const shape = object({ a: string(), b: boolean() }, { required: ['a'], closed: true });
    agree(shape, [{ a: 'x' }, { a: 'x', b: true }, { b: true }, { a: 'x', c: 1 }, { a: 1 }, [], null]);
    agree(object({ 'dotted.key': integer({ minimum: 1 }) }), [{ 'dotted.key': 1 }, { 'dotted.key': 0 }, {}]);
  });

  it('test a shape that holds itself, through its definition', () => {
    const tree: Shape = object({ children: list(ref('tree', () => tree)) });
    agree(tree, [{ children: [{ children: [] }, {}] }, { children: [{ children: [1] }] }, { children: 1 }], {
      tree,
    });
  });

  it('take a value any branch of a oneOf describes, where the schema asks exactly one', () => {
    const present = object({ present: constant(true) }, { required: ['present'] });
    const absent = object({ absent: constant(true) }, { required: ['absent'] });
    const match = oneOf([string(), present, absent]);
    agree(match, ['a', { present: true }, { absent: true }, { present: false }, 1]);
    assert.equal(written(match)({ present: true, absent: true }), true, 'a receiver takes it');
  });
});
