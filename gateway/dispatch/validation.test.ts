import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import {
  HANDLER_KIND_NAMES,
  type HandlerSpec,
  type InvocationResponse,
  isAdmissionKind,
  isHandlerKind,
  type KubernetesObject,
  type Manifest,
  PROTOCOL,
} from '../../protocol/index.ts';
import { isObject, jsonCopy, mergePatched, valueAt } from '../../protocol/json.ts';
import {
  benignKey,
  jsonTree,
  jsonValue,
  kubeObject,
  labelValue,
  metadataKey,
  nested,
  oddString,
  PROTOTYPE_KEYS,
  setAtPath,
  wrongValue,
} from '../../test/support/arbitraries.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import { changeMatches, filterMiss } from '../reactor/filters.ts';
import type { Cause } from '../reactor/model.ts';
import { collectEffects, emptyEffects } from '../reactor/outcomes.ts';
import { planWrites } from '../reactor/write-plan.ts';
import { StateStorage } from '../state/storage.ts';
import { ScopeError } from './scope.ts';
import {
  batchAnswers,
  ProtocolError,
  parseBatchResponse,
  parseHealth,
  parseInvocationResponse,
  parseManifest,
  REPLY_LIMITS,
} from './validation.ts';

/** The answer for one handler `h` with these events. */
const answer = (events: unknown) => ({
  protocol: PROTOCOL,
  outcomes: { h: { status: 'success', events } },
  logs: [],
});

const parsedEvents = (events: unknown) => parseInvocationResponse(answer(events), ['h']).outcomes.h?.events;

describe('validating events', () => {
  it('keeps the events of an outcome, and the object each is about, leaving out anything else', () => {
    assert.deepEqual(
      parsedEvents([
        { type: 'Normal', reason: 'Made', message: 'about the object', extra: 1 },
        {
          type: 'Warning',
          reason: 'Child',
          message: 'about another',
          about: {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            name: 'c',
            namespace: 'ns',
            uid: 'u',
            fieldPath: 'x',
          },
        },
        {
          type: 'Normal',
          reason: 'Cluster',
          message: 'm',
          about: { apiVersion: 'v1', kind: 'Namespace', name: 'ns' },
        },
      ]),
      [
        { type: 'Normal', reason: 'Made', message: 'about the object' },
        {
          type: 'Warning',
          reason: 'Child',
          message: 'about another',
          about: { apiVersion: 'v1', kind: 'ConfigMap', name: 'c', namespace: 'ns', uid: 'u' },
        },
        {
          type: 'Normal',
          reason: 'Cluster',
          message: 'm',
          about: { apiVersion: 'v1', kind: 'Namespace', name: 'ns' },
        },
      ],
    );
  });

  it('refuses a malformed event, saying which', () => {
    assert.throws(
      () => parsedEvents([{ type: 'Info', reason: 'r', message: 'm' }]),
      new ProtocolError('response.outcomes.h.events[0] needs type Normal or Warning, a reason and a message'),
    );
    assert.throws(() => parsedEvents({}), /response\.outcomes\.h\.events must be an array/);
  });

  it('refuses an `about` that does not reference an object', () => {
    const ok = { apiVersion: 'v1', kind: 'ConfigMap', name: 'c' };
    for (const about of [
      null,
      'c',
      [ok],
      { kind: 'ConfigMap', name: 'c' },
      { ...ok, apiVersion: '' },
      { ...ok, kind: 7 },
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } },
      { ...ok, namespace: '' },
      { ...ok, namespace: null },
      { ...ok, uid: 42 },
    ]) {
      assert.throws(
        () =>
          parsedEvents([
            { type: 'Normal', reason: 'ok', message: 'ok' },
            { type: 'Normal', reason: 'r', message: 'm', about },
          ]),
        (error: unknown) =>
          error instanceof ProtocolError &&
          error.message ===
            'response.outcomes.h.events[1].about must reference an object: apiVersion, kind and name, and namespace and uid if any, as non-empty strings',
        JSON.stringify(about),
      );
    }
  });
});

/** A reply as the gateway reads it off the wire: JSON.parse makes `__proto__` an own key, as a service sends it. */
const received = (json: string): unknown => JSON.parse(json);

describe('keys that reach a prototype', () => {
  it('refuse a reply holding __proto__, constructor or prototype anywhere, saying which key and where', () => {
    const cases: Array<[() => unknown, string]> = [
      [
        () =>
          parseInvocationResponse(
            received(
              `{"protocol":"${PROTOCOL}","outcomes":{"create_fn":{"status":"success","patch":{"spec":{"__proto__":{"polluted":true}}}}}}`,
            ),
            ['create_fn'],
          ),
        'response.outcomes.create_fn.patch.spec.__proto__: a reply may not hold the key "__proto__", which reaches an object\'s prototype',
      ],
      [
        () =>
          parseInvocationResponse(
            received(
              `{"protocol":"${PROTOCOL}","outcomes":{"h":{"status":"success"}},"logs":[{"level":"info","message":"m","x":{"a b":{"constructor":{"prototype":{}}}}}]}`,
            ),
            ['h'],
          ),
        'response.logs[0].x["a b"].constructor: a reply may not hold the key "constructor", which reaches an object\'s prototype',
      ],
      [
        () =>
          parseBatchResponse(
            received(
              `{"protocol":"${PROTOCOL}","batch":[{"protocol":"${PROTOCOL}","outcomes":{"i":{"status":"success","result":[["k",{"prototype":1}]]}}}]}`,
            ),
            [['i']],
          ),
        'batch.batch[0].outcomes.i.result[0][1].prototype: a reply may not hold the key "prototype", which reaches an object\'s prototype',
      ],
      [
        () => batchAnswers(received(`{"protocol":"${PROTOCOL}","batch":[],"__proto__":{"admin":true}}`), 0),
        'batch.__proto__: a reply may not hold the key "__proto__", which reaches an object\'s prototype',
      ],
      [
        () => parseHealth(received(`{"protocol":"${PROTOCOL}","name":"s","__proto__":{"admin":true}}`)),
        'health.__proto__: a reply may not hold the key "__proto__", which reaches an object\'s prototype',
      ],
      [
        () =>
          parseManifest(
            received(
              `{"protocol":"${PROTOCOL}","name":"s","handlers":[{"id":"h","kind":"create","resource":{"name":"pods"},"options":{"__proto__":{}}}]}`,
            ),
          ),
        'manifest.handlers[0].options.__proto__: a reply may not hold the key "__proto__", which reaches an object\'s prototype',
      ],
    ];
    for (const [parse, message] of cases) assert.throws(parse, new ProtocolError(message));
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('refuse a handler or activity whose id is one, as the id keys its result and progress', () => {
    assert.throws(
      () =>
        parseManifest({
          protocol: PROTOCOL,
          name: 's',
          handlers: [{ id: '__proto__', kind: 'create', resource: { name: 'pods' } }],
        }),
      new ProtocolError(
        `manifest.handlers[0].id "__proto__" may not be a key that reaches an object's prototype`,
      ),
    );
    assert.throws(
      () =>
        parseManifest({
          protocol: PROTOCOL,
          name: 's',
          handlers: [],
          activities: [{ id: 'constructor', kind: 'startup' }],
        }),
      new ProtocolError(
        `manifest.activities[0].id "constructor" may not be a key that reaches an object's prototype`,
      ),
    );
  });

  it('refuse what an admission handler would write into the webhook configuration every service shares, and the apiserver refuse there', () => {
    const validating = (options: Record<string, unknown>) => ({
      protocol: PROTOCOL,
      name: 's',
      handlers: [{ id: 'check', kind: 'validate', resource: { name: 'pods' }, options }],
    });
    for (const timeout of [31, 1.5]) {
      assert.throws(
        () => parseManifest(validating({ timeout })),
        new ProtocolError(
          'manifest.handlers[0].options.timeout of an admission handler must be a whole number of seconds, 1 to 30',
        ),
      );
    }
    for (const subresource of ['status/x', 'Scale', '']) {
      assert.throws(
        () => parseManifest(validating({ subresource })),
        new ProtocolError(
          "manifest.handlers[0].options.subresource must be a subresource's name (status, scale), or * for all",
        ),
      );
    }
    const taken = parseManifest(validating({ timeout: 30, subresource: '*' })).manifest.handlers[0];
    assert.deepEqual(taken?.options, { timeout: 30, subresource: '*' });
    // A timeout of a handler that is not an admission handler is its deadline: it may be longer.
    const create = {
      ...validating({}),
      handlers: [{ id: 'c', kind: 'create', resource: { name: 'pods' }, options: { timeout: 600 } }],
    };
    assert.equal(parseManifest(create).manifest.handlers[0]?.options?.timeout, 600);
  });

  it('refuse label filters the apiserver would refuse in a selector, naming the key, as the SDK refuses them', () => {
    const filtered = (filters: Record<string, unknown>) => ({
      protocol: PROTOCOL,
      name: 's',
      handlers: [{ id: 'check', kind: 'validate', resource: { name: 'pods' }, filters }],
    });
    const key =
      "a label's key ([prefix/]name: a DNS subdomain, then 63 letters, digits, '-', '_' or '.' at most)";
    for (const bad of [
      'bad key',
      'a,b',
      'Example.com/x',
      `${'x'.repeat(64)}`,
      'a/b/c',
      '-x',
      `${'p'.repeat(254)}/x`,
    ]) {
      assert.throws(
        () => parseManifest(filtered({ labels: { [bad]: 'v' } })),
        new ProtocolError(
          `manifest.handlers[0].filters.labels${/^[A-Za-z_$][\w$-]*$/.test(bad) ? `.${bad}` : JSON.stringify([bad])}: the key must be ${key}`,
        ),
        bad,
      );
    }
    for (const bad of ['a b', 'x,y=z', 'x'.repeat(64), '-v']) {
      assert.throws(
        () => parseManifest(filtered({ labels: { app: bad } })),
        new ProtocolError(
          `manifest.handlers[0].filters.labels.app must be a label's value (63 letters, digits, '-', '_' or '.' at most, a letter or digit at each end), {"present": true} or {"absent": true}`,
        ),
        bad,
      );
    }
    const good = {
      app: 'web',
      'example.com/tier': '',
      'kubernetes.io/metadata.name': { present: true },
      [`${'p'.repeat(253)}/${'n'.repeat(63)}`]: { absent: true },
    };
    assert.deepEqual(parseManifest(filtered({ labels: good })).manifest.handlers[0]?.filters?.labels, good);
  });

  it('refuse annotation filters whose key no annotation can have, and take any value', () => {
    const filtered = (annotations: Record<string, unknown>) => ({
      protocol: PROTOCOL,
      name: 's',
      handlers: [{ id: 'c', kind: 'create', resource: { name: 'pods' }, filters: { annotations } }],
    });
    assert.throws(
      () => parseManifest(filtered({ 'no spaces please': 'v' })),
      new ProtocolError(
        `manifest.handlers[0].filters.annotations["no spaces please"]: the key must be an annotation's key ([prefix/]name: a DNS subdomain, then 63 letters, digits, '-', '_' or '.' at most)`,
      ),
    );
    const good = { 'Example.com/Note': 'any value, spaces, commas: all fine' };
    assert.deepEqual(parseManifest(filtered(good)).manifest.handlers[0]?.filters?.annotations, good);
  });

  it('refuse ids with whitespace or longer than 253 characters, and a service name that is not a DNS label', () => {
    const withId = (id: string) => ({
      protocol: PROTOCOL,
      name: 's',
      handlers: [{ id, kind: 'create', resource: { name: 'pods' } }],
    });
    for (const id of ['two words', 'tab\there', 'x'.repeat(254)]) {
      assert.throws(
        () => parseManifest(withId(id)),
        new ProtocolError(
          `manifest.handlers[0].id ${JSON.stringify(id)} must be a word of 1 to 253 characters, without whitespace`,
        ),
      );
    }
    assert.equal(parseManifest(withId('fn/spec.field')).manifest.handlers[0]?.id, 'fn/spec.field');
    assert.throws(
      () =>
        parseManifest({
          protocol: PROTOCOL,
          name: 's',
          handlers: [],
          activities: [{ id: 'a b', kind: 'startup' }],
        }),
      new ProtocolError(
        'manifest.activities[0].id "a b" must be a word of 1 to 253 characters, without whitespace',
      ),
    );
    for (const name of ['Upper', 'under_score', 'x'.repeat(64), '-dash']) {
      assert.throws(
        () => parseManifest({ protocol: PROTOCOL, name, handlers: [] }),
        new ProtocolError(
          `manifest.name ${JSON.stringify(name)} must be a DNS-1123 label: up to 63 lowercase letters, digits and "-", starting and ending with a letter or digit`,
        ),
      );
    }
  });

  it('keep whether a service takes sessions and keeps indexes, and refuse a manifest that says so in anything but a boolean', () => {
    const manifest = { protocol: PROTOCOL, name: 's', handlers: [] };
    for (const flag of ['sessions', 'indexVersions'] as const) {
      assert.equal(parseManifest({ ...manifest, [flag]: true }).manifest[flag], true);
      assert.equal(parseManifest({ ...manifest, [flag]: false }).manifest[flag], undefined);
      assert.throws(
        () => parseManifest({ ...manifest, [flag]: 'yes' }),
        new ProtocolError(`manifest.${flag} is not a boolean`),
      );
    }
  });

  it('refuse a reply nested deeper than the merges go', () => {
    const deep = `${'{"a":'.repeat(REPLY_LIMITS.depth)}1${'}'.repeat(REPLY_LIMITS.depth)}`;
    const reply = `{"protocol":"${PROTOCOL}","outcomes":{"h":{"status":"success","result":${deep}}}}`;
    assert.throws(
      () => parseInvocationResponse(received(reply), ['h']),
      (error: unknown) =>
        error instanceof ProtocolError &&
        /^response\.outcomes\.h\.result(\.a)+: a reply may not nest deeper than 100 levels$/.test(
          error.message,
        ),
    );
    const shallower = `${'{"a":'.repeat(50)}1${'}'.repeat(50)}`;
    parseInvocationResponse(
      received(`{"protocol":"${PROTOCOL}","outcomes":{"h":{"status":"success","result":${shallower}}}}`),
      ['h'],
    );
  });
});

describe('what a response may hold', () => {
  const event = { type: 'Normal', reason: 'R', message: 'm' };
  const object = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } };
  const response = (outcomes: Record<string, unknown>, logs: unknown[] = []) => ({
    protocol: PROTOCOL,
    outcomes,
    logs,
  });
  const times = <T>(n: number, item: T): T[] => Array.from({ length: n }, () => item);

  it('takes up to the caps, its handlers and sub-handlers together', () => {
    const half = (n: number) => Math.floor(n / 2);
    const parsed = parseInvocationResponse(
      response(
        {
          a: { status: 'success', events: times(half(REPLY_LIMITS.events), event) },
          b: {
            status: 'success',
            apply: times(REPLY_LIMITS.applyObjects, object),
            subhandlers: { s: { status: 'success', events: times(half(REPLY_LIMITS.events), event) } },
          },
        },
        times(REPLY_LIMITS.logLines, { level: 'info', message: 'm' }),
      ),
      ['a', 'b'],
    );
    assert.equal(parsed.logs.length, 1000);
  });

  it('fails a response over a cap, saying which', () => {
    const over: Array<[Record<string, unknown>, unknown[], boolean, RegExp]> = [
      [
        {
          a: { status: 'success', events: times(60, event) },
          b: { status: 'success', subhandlers: { s: { status: 'success', events: times(41, event) } } },
        },
        [],
        false,
        /^response\.outcomes\.b\.subhandlers\.s\.events: a response may hold 100 events at most, its handlers' together$/,
      ],
      [
        { a: { status: 'success', apply: times(101, object) } },
        [],
        false,
        /^response\.outcomes\.a\.apply: a response may hold 100 objects to apply at most/,
      ],
      [
        { a: { status: 'success', warnings: times(51, 'w') } },
        [],
        true,
        /^response\.outcomes\.a\.warnings: a response may hold 50 warnings at most/,
      ],
      [
        { a: { status: 'success' } },
        times(1001, { level: 'info', message: 'm' }),
        false,
        /^response\.logs holds 1001 lines, more than the 1000 a response may hold$/,
      ],
    ];
    for (const [outcomes, logs, admission, message] of over) {
      assert.throws(
        () => parseInvocationResponse(response(outcomes, logs), Object.keys(outcomes), admission),
        (error: unknown) => error instanceof ProtocolError && message.test(error.message),
      );
    }
  });

  // Found by the generated replies below: each was taken, and Infinity or 1e300 seconds then failed every
  // cycle of the object (a date out of range), and a message of 7 became "7".
  it('refuses a delay or a requeue no date can hold, and a message that is not a string', () => {
    const refused: Array<[string, RegExp]> = [
      [
        '{"status":"temporary","message":"m","delay":1e999}',
        /^response\.outcomes\.a\.delay must be a number of seconds from 0 to 31536000 \(a year\)$/,
      ],
      ['{"status":"temporary","message":"m","delay":1e300}', /^response\.outcomes\.a\.delay must be/],
      [
        '{"status":"success","requeueAfter":1e999}',
        /^response\.outcomes\.a\.requeueAfter must be a number of seconds above 0, at most 31536000 \(a year\)$/,
      ],
      ['{"status":"permanent","message":7}', /^response\.outcomes\.a\.message must be a string$/],
      ['{"status":"temporary","delay":1}', /^response\.outcomes\.a\.message must be a string$/],
    ];
    for (const [outcome, message] of refused) {
      const text = `{"protocol":"${PROTOCOL}","outcomes":{"a":${outcome}},"logs":[]}`;
      assert.throws(
        () => parseInvocationResponse(received(text), ['a']),
        (error: unknown) => error instanceof ProtocolError && message.test(error.message),
        outcome,
      );
    }
  });

  it('cuts a long log message as it is logged, saying how much', () => {
    const message = 'x'.repeat(REPLY_LIMITS.logMessageChars + 10);
    const parsed = parseInvocationResponse(
      response({ a: { status: 'success' } }, [{ level: 'info', message }]),
      ['a'],
    );
    assert.equal(parsed.logs[0]?.message, `${'x'.repeat(4096)}… (10 more characters not logged)`);
  });

  it('keeps of a log line what is logged, and refuses a handler that is not a string', () => {
    const line = { level: 'info', message: 'm', handler: 'h', extra: 'x'.repeat(10_000) };
    const parsed = parseInvocationResponse(response({ a: { status: 'success' } }, [line]), ['a']);
    assert.deepEqual(parsed.logs, [{ level: 'info', message: 'm', handler: 'h' }]);
    assert.throws(
      () =>
        parseInvocationResponse(
          response({ a: { status: 'success' } }, [{ level: 'info', message: 'm', handler: { h: 1 } }]),
          ['a'],
        ),
      /^ProtocolError: response\.logs has a malformed line/,
    );
  });
});

/** JSON merge patch as RFC 7386 writes it in pseudo-code (a Map, so that no key is special). */
function rfc7386(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const result = new Map(isObject(target) ? Object.entries(target) : []);
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) result.delete(name);
    else result.set(name, rfc7386(result.get(name), value));
  }
  return Object.fromEntries(result);
}

/** What a polluted prototype would show on every object. */
const PROBE = 'causewayPolluted';
/** Stands for the hostile key until the reply is JSON text: no generated string holds a control character. */
const MARKER = '\u0001hostile';

/**
 * `tree` as the JSON text of a reply, with `key: {PROBE: true, ...}` added to the object that `choices`
 * lead to (each picks one of the objects under the one before), parsed as the gateway parses a reply.
 */
function withHostileKey(tree: Record<string, unknown>, choices: readonly number[], key: string): unknown {
  const copy = jsonCopy(tree);
  let node = copy;
  for (const choice of choices) {
    const under = Object.values(node).flatMap((value) =>
      Array.isArray(value) ? value.filter(isObject) : isObject(value) ? [value] : [],
    );
    if (under.length === 0) break;
    node = under[choice % under.length] as Record<string, unknown>;
  }
  node[MARKER] = { [PROBE]: true, prototype: { [PROBE]: true } };
  return JSON.parse(JSON.stringify(copy).replace(JSON.stringify(MARKER), JSON.stringify(key)));
}

/**
 * A patch of the object outside its status: the gateway writes `status` apart (a subresource), and
 * none at all when it is empty, where RFC 7386 would make an empty one.
 */
const objectPatch = jsonTree.filter((patch) => !Object.hasOwn(patch, 'status'));

const hostile = fc.record({
  tree: jsonTree,
  choices: fc.array(fc.nat(), { maxLength: 6 }),
  key: fc.constantFrom(...PROTOTYPE_KEYS),
});

/** Fails, and undoes it, if anything was added to Object.prototype. */
function assertPrototypeUntouched(before: readonly string[]): void {
  const added = Object.getOwnPropertyNames(Object.prototype).filter((name) => !before.includes(name));
  for (const name of added) delete (Object.prototype as Record<string, unknown>)[name];
  assert.deepEqual(added, [], 'Object.prototype got new properties');
  assert.equal(({} as Record<string, unknown>)[PROBE], undefined);
}

const storage = new StateStorage('status', DEFAULT_IDENTITY);
const cause: Cause = {
  reason: 'update',
  new: {},
  diff: [],
  essence: '{}',
  firstSight: false,
  existedAtStart: false,
};

/** The changes a cycle writes for these patches of its handlers, as one patch of the whole object. */
function plannedPatch(patches: readonly Record<string, unknown>[]): Record<string, unknown> {
  const effects = emptyEffects();
  for (const [index, patch] of patches.entries())
    collectEffects(effects, { status: 'success', patch }, `h${index}`);
  const { changes } = planWrites(cause, { progress: {}, effects, state: 'untouched' }, {}, storage);
  return Object.keys(changes.status).length > 0
    ? { ...changes.object, status: changes.status }
    : changes.object;
}

describe('generated replies (property-based)', () => {
  const before = Object.getOwnPropertyNames(Object.prototype);
  const reply = (outcome: Record<string, unknown>) => ({
    protocol: PROTOCOL,
    outcomes: { h: outcome },
    logs: [],
  });

  it('refuses a reply with a hostile key at any depth, naming it, and Object.prototype stays as it was', () => {
    fc.assert(
      fc.property(
        hostile,
        fc.constantFrom('patch', 'result', 'memo', 'outcome'),
        ({ tree, choices, key }, where) => {
          const text = JSON.stringify(
            where === 'memo'
              ? { ...reply({ status: 'success' }), memo: tree }
              : reply(
                  where === 'outcome' ? { ...tree, status: 'success' } : { status: 'success', [where]: tree },
                ),
          );
          const sent = withHostileKey(JSON.parse(text), choices, key);
          assert.throws(
            () => parseInvocationResponse(sent, ['h']),
            (error: unknown) =>
              error instanceof ProtocolError &&
              error.message.startsWith('response') &&
              error.message.includes(`: a reply may not hold the key "${key}"`),
          );
          assertPrototypeUntouched(before);
        },
      ),
    );
  });

  it('merges a hostile patch that reaches the write plan as data, into objects with no prototype', () => {
    fc.assert(
      fc.property(hostile, jsonTree, ({ tree, choices, key }, other) => {
        const patch = withHostileKey({ spec: tree }, choices, key) as Record<string, unknown>;
        // Two patches, so that one is merged into what the other left: the path a recursion takes.
        const planned = plannedPatch([{ spec: other }, patch]);
        assertPrototypeUntouched(before);
        assert.ok(JSON.stringify(planned).includes(JSON.stringify(key)), `"${key}" is kept as a key`);
      }),
    );
  });

  it('accepts a benign reply, and writes what RFC 7386 says its patch makes of the object', () => {
    fc.assert(
      fc.property(jsonTree, objectPatch, (object, patch) => {
        const parsed = parseInvocationResponse(
          received(JSON.stringify(reply({ status: 'success', patch }))),
          ['h'],
        );
        const given = parsed.outcomes.h?.patch as Record<string, unknown>;
        const written = mergePatched(object, plannedPatch([given]));
        assert.deepEqual(jsonCopy(written), jsonCopy(rfc7386(object, patch)));
      }),
    );
  });
});

const ajv = new Ajv2020({ allErrors: true, strict: true, validateFormats: false });
const responseSchema = ajv.compile(
  JSON.parse(
    readFileSync(new URL('../../protocol/schema/invocation-response.schema.json', import.meta.url), 'utf8'),
  ),
);

/** A well-formed reply to a call of `ids`, as the schema describes one (admission replies may deny and warn). */
function wellFormedReply(admission: boolean) {
  const text = fc.string({ maxLength: 12 });
  const nonEmpty = fc.string({ minLength: 1, maxLength: 12 });
  const about = fc.record(
    { apiVersion: nonEmpty, kind: nonEmpty, name: nonEmpty, namespace: nonEmpty, uid: nonEmpty },
    { requiredKeys: ['apiVersion', 'kind', 'name'] },
  );
  const event = fc.record(
    { type: fc.constantFrom('Normal', 'Warning'), reason: text, message: oddString, about },
    { requiredKeys: ['type', 'reason', 'message'] },
  );
  const applied = fc.record({
    apiVersion: text,
    kind: text,
    metadata: fc.oneof(fc.record({ name: text }), fc.record({ generateName: text })),
  });
  const seconds = fc.double({ min: 0, max: 1e6, noNaN: true });
  const effects = fc.record(
    {
      patch: jsonTree.filter((patch) => !Object.hasOwn(patch, 'metadata')),
      events: fc.array(event, { maxLength: 3 }),
      apply: fc.array(applied, { maxLength: 3 }),
      requeueAfter: seconds.filter((value) => value > 0),
      roundEnded: fc.boolean(),
      ...(admission ? { warnings: fc.array(oddString, { maxLength: 3 }) } : {}),
    },
    { requiredKeys: [] },
  );
  const statuses = [
    fc.record({ status: fc.constant('success'), result: jsonValue }, { requiredKeys: ['status'] }),
    fc.record({ status: fc.constant('temporary'), message: oddString, delay: seconds }),
    fc.record({ status: fc.constant('permanent'), message: oddString }),
    fc.record({ status: fc.constant('skipped') }),
    ...(admission
      ? [
          fc.record({
            status: fc.constant('denied'),
            message: oddString,
            code: fc.integer({ min: 400, max: 599 }),
          }),
        ]
      : []),
  ];
  const leaf = fc.tuple(fc.oneof(...statuses), effects).map(([status, more]) => ({ ...more, ...status }));
  const outcome = fc
    .tuple(
      leaf,
      fc.option(fc.dictionary(benignKey, leaf, { maxKeys: 2, noNullPrototype: true }), { nil: undefined }),
    )
    .map(([parent, subhandlers]) => (subhandlers ? { ...parent, subhandlers } : parent));
  return fc.record(
    {
      protocol: fc.constant(PROTOCOL),
      outcomes: fc.dictionary(benignKey, outcome, { minKeys: 1, maxKeys: 3, noNullPrototype: true }),
      logs: fc.array(
        fc.record(
          { level: fc.constantFrom('debug', 'info', 'warning', 'error'), message: oddString, handler: text },
          { requiredKeys: ['level', 'message'] },
        ),
        { maxLength: 3 },
      ),
      memo: jsonTree,
    },
    { requiredKeys: ['protocol', 'outcomes', 'logs'] },
  );
}

/** The fields of an outcome, and of a response, that a mutation may break. */
const OUTCOME_FIELDS = [
  'status',
  'result',
  'message',
  'delay',
  'code',
  'patch',
  'events',
  'apply',
  'subhandlers',
  'requeueAfter',
  'roundEnded',
  'warnings',
] as const;
/** Stands for a number that JSON.parse makes Infinity (1e999): JSON.stringify cannot write one. */
const INFINITE = '\u0001infinite';

/** One way a service's reply goes wrong: a field of one outcome, or of the response, broken. */
const mutation = fc.oneof(
  fc.record({
    where: fc.constant('outcome' as const),
    choice: fc.nat(),
    field: fc.constantFrom(...OUTCOME_FIELDS),
    to: fc.oneof(
      wrongValue.map((value) => ({ set: value })),
      fc.constant({ set: undefined }),
      fc.constant({ set: INFINITE }),
      fc.constantFrom(101, 1000).map((length) => ({ set: Array.from({ length }, () => 'w') })),
      fc
        .integer({ min: REPLY_LIMITS.depth, max: 3 * REPLY_LIMITS.depth })
        .map((depth) => ({ set: nested(depth) })),
      fc.constant({ set: 'x'.repeat(1 << 16) }),
    ),
  }),
  fc.record({
    where: fc.constant('response' as const),
    field: fc.constantFrom('protocol', 'outcomes', 'logs', 'memo'),
    to: fc.oneof(
      wrongValue.map((value) => ({ set: value })),
      fc.constant({ set: undefined }),
      fc.constant({
        set: Array.from({ length: REPLY_LIMITS.logLines + 1 }, () => ({ level: 'info', message: 'm' })),
      }),
    ),
  }),
);

/** `reply` with `change` made, as the JSON text a service sends; and the path of what was changed. */
function mutated(
  reply: Record<string, unknown>,
  change: typeof mutation extends fc.Arbitrary<infer M> ? M : never,
): { text: string; path: string } {
  const copy = jsonCopy(reply) as { outcomes: Record<string, Record<string, unknown>> } & Record<
    string,
    unknown
  >;
  let target: Record<string, unknown> = copy;
  let path = 'response';
  if (change.where === 'outcome') {
    const ids = Object.keys(copy.outcomes);
    const id = ids[change.choice % ids.length] as string;
    target = copy.outcomes[id] as Record<string, unknown>;
    path = `response.outcomes.${id}`;
  }
  if (change.to.set === undefined) delete target[change.field];
  else target[change.field] = change.to.set;
  return { text: JSON.stringify(copy).replace(JSON.stringify(INFINITE), '1e999'), path };
}

describe('generated replies against the schema (property-based)', () => {
  /** A reply, to a call that reviews an admission or not; its handlers named as the errors name them. */
  const replies = fc.boolean().chain((admission) =>
    wellFormedReply(admission).map((reply) => ({
      admission,
      reply: {
        ...reply,
        outcomes: Object.fromEntries(
          Object.values(reply.outcomes).map((outcome, index) => [`h${index}`, outcome]),
        ),
      },
    })),
  );

  it('reads a well-formed reply as it was sent, and the schema agrees it is one', () => {
    fc.assert(
      fc.property(replies, ({ admission, reply }) => {
        assert.ok(responseSchema(reply), JSON.stringify(responseSchema.errors));
        const parsed = parseInvocationResponse(
          received(JSON.stringify(reply)),
          Object.keys(reply.outcomes),
          admission,
        );
        assert.deepEqual(jsonCopy(parsed), jsonCopy(reply));
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses a broken reply naming the part that is wrong, or takes it only where the schema does', () => {
    fc.assert(
      fc.property(replies, mutation, ({ admission, reply }, change) => {
        const { text, path } = mutated(reply, change);
        const sent = received(text);
        let parsed: InvocationResponse | undefined;
        try {
          parsed = parseInvocationResponse(sent, Object.keys(reply.outcomes), admission);
        } catch (error) {
          assert.ok(error instanceof ProtocolError, `a ProtocolError, not ${error}`);
          const field = change.where === 'outcome' ? path : `response.${change.field}`;
          assert.ok(
            error.message.includes(field) ||
              (change.field === 'protocol' && error.message.startsWith('response speaks protocol')) ||
              (change.field === 'outcomes' && error.message.startsWith('response has no outcome')),
            `${error.message} names ${field}`,
          );
          return;
        }
        // The one leniency: a reply without logs is read as one with none.
        if (change.where === 'response' && change.field === 'logs' && change.to.set === undefined) return;
        assert.ok(
          responseSchema(sent),
          `taken, though the schema refuses it: ${JSON.stringify(responseSchema.errors)}`,
        );
        assert.ok(parsed);
      }),
      { numRuns: 1000 },
    );
  });
});

const manifestSchema = ajv.compile(
  JSON.parse(readFileSync(new URL('../../protocol/schema/manifest.schema.json', import.meta.url), 'utf8')),
);

/** A manifest as the schema describes one: handlers of every kind (and of a kind to come), with filters and options. */
const wellFormedManifest = (() => {
  const metaMatch = fc.oneof(labelValue, fc.constant({ present: true }), fc.constant({ absent: true }));
  const valueMatch = fc.oneof(
    jsonValue.map((equals) => ({ equals })),
    fc.constant({ present: true }),
    fc.constant({ absent: true }),
  );
  const seconds = fc.double({ min: 0, max: 1e6, noNaN: true });
  const filters = fc.record(
    {
      labels: fc.dictionary(metadataKey, metaMatch, { maxKeys: 2, noNullPrototype: true }),
      annotations: fc.dictionary(metadataKey, metaMatch, { maxKeys: 2, noNullPrototype: true }),
      field: fc.constantFrom('spec', 'spec.a', 'spec.a.b', 'metadata.labels.app'),
      old: valueMatch,
      new: valueMatch,
      when: fc.boolean(),
    },
    { requiredKeys: [] },
  );
  const options = fc.record(
    {
      retries: fc.integer({ min: 1, max: 100 }),
      timeout: seconds.filter((value) => value > 0),
      backoff: seconds,
      deleted: fc.boolean(),
      interval: seconds.filter((value) => value > 0),
      idle: seconds,
      initialDelay: seconds,
      cancellationTimeout: seconds,
      sharp: fc.boolean(),
      operations: fc.uniqueArray(fc.constantFrom('CREATE', 'UPDATE', 'DELETE', 'CONNECT'), { minLength: 1 }),
      subresource: fc.constantFrom('status', 'scale'),
      persistent: fc.boolean(),
      sideEffects: fc.boolean(),
      ignoreFailures: fc.boolean(),
    },
    { requiredKeys: [] },
  );
  const handler = fc.record(
    {
      kind: fc.constantFrom(...HANDLER_KIND_NAMES, 'to-come'),
      resource: fc.oneof(
        fc.record({
          name: fc.constantFrom('kopfexamples', 'pods', 'kex'),
          group: fc.constantFrom('', 'kopf.dev'),
        }),
        fc.record({ category: fc.constantFrom('all', 'kopf') }),
      ),
      filters,
      options,
    },
    { requiredKeys: ['kind', 'resource'] },
  );
  // An admission handler's timeout is whole seconds, 1 to 30, as the SDK writes it and the apiserver takes it.
  const written = handler.map((each) =>
    isHandlerKind(each.kind) && isAdmissionKind(each.kind) && each.options?.timeout !== undefined
      ? { ...each, options: { ...each.options, timeout: Math.min(30, Math.ceil(each.options.timeout)) } }
      : each,
  );
  return fc.array(written, { maxLength: 5 }).map((handlers) => ({
    protocol: PROTOCOL,
    name: 'svc',
    handlers: handlers.map((each, index) => ({ id: `h${index}`, ...each })),
  }));
})();

/** The fields of a handler a mutation may break, down to one filter or option. */
const HANDLER_PARTS = [
  ['id'],
  ['kind'],
  ['resource'],
  ['resource', 'name'],
  ['filters'],
  ['filters', 'labels'],
  ['filters', 'labels', 'app'],
  ['filters', 'annotations', 'note'],
  ['filters', 'field'],
  ['filters', 'old'],
  ['filters', 'new'],
  ['filters', 'value'],
  ['filters', 'when'],
  ['filters', 'namespaces'],
  ['options'],
  ...[
    'retries',
    'timeout',
    'backoff',
    'interval',
    'idle',
    'initialDelay',
    'operations',
    'indexes',
    'optional',
  ].map((option) => ['options', option]),
] as const;

describe('generated manifests (property-based)', () => {
  const objects = fc.array(kubeObject({ spec: jsonTree }), { minLength: 1, maxLength: 2 });

  /** Every filter of every handler matched against `objects`, as the reactor matches them: throws if one cannot be. */
  function matchAll(handlers: readonly HandlerSpec[], against: readonly KubernetesObject[]): void {
    for (const { filters } of handlers) {
      for (const [index, object] of against.entries()) {
        filterMiss(object, filters, against[index - 1]);
        changeMatches(
          valueAt(against[index - 1], filters?.field ?? 'spec'),
          valueAt(object, filters?.field ?? 'spec'),
          filters,
        );
      }
    }
  }

  // Found by the property below: each was taken, and the first failed the matching of every object of
  // the resource (`'present' in null`), the others set timers Node runs at once.
  it('refuses filters the gateway cannot match with, and options of the wrong type, naming them', () => {
    const refused: Array<[string, string]> = [
      [
        '"filters":{"labels":{"app":null}}',
        `manifest.handlers[0].filters.labels.app must be a label's value (63 letters, digits, '-', '_' or '.' at most, a letter or digit at each end), {"present": true} or {"absent": true}`,
      ],
      [
        '"filters":{"old":1}',
        'manifest.handlers[0].filters.old must be {"equals": …}, {"present": true} or {"absent": true}',
      ],
      [
        '"filters":{"field":"spec..a"}',
        'manifest.handlers[0].filters.field must be a dotted path (spec.a.b)',
      ],
      [
        '"options":{"timeout":1e999}',
        'manifest.handlers[0].options.timeout must be a number of seconds above 0, at most 31536000 (a year)',
      ],
      ['"options":{"retries":"3"}', 'manifest.handlers[0].options.retries must be an integer ≥ 1'],
    ];
    for (const [part, message] of refused) {
      const text = `{"protocol":"${PROTOCOL}","name":"s","handlers":[{"id":"h","kind":"create","resource":{"name":"pods"},${part}}]}`;
      assert.throws(() => parseManifest(received(text)), new ProtocolError(message), part);
    }
  });

  it('reads a well-formed manifest as it was served: the kinds it knows, and the others named', () => {
    fc.assert(
      fc.property(wellFormedManifest, objects, (manifest, against) => {
        assert.ok(manifestSchema(manifest), JSON.stringify(manifestSchema.errors));
        const { manifest: parsed, unknownKinds } = parseManifest(received(JSON.stringify(manifest)));
        const known = manifest.handlers.filter((handler) => handler.kind !== 'to-come');
        assert.deepEqual(jsonCopy(parsed.handlers), jsonCopy(known));
        assert.deepEqual(
          unknownKinds,
          manifest.handlers.filter((handler) => handler.kind === 'to-come').map(() => 'to-come'),
        );
        matchAll(parsed.handlers, against);
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses a broken handler naming it, or takes only one whose filters every object can be matched with', () => {
    fc.assert(
      fc.property(
        wellFormedManifest.filter((manifest) => manifest.handlers.length > 0),
        fc.nat(),
        fc.constantFrom(...HANDLER_PARTS),
        fc.oneof(wrongValue, fc.constant(undefined), fc.constant(INFINITE)),
        objects,
        (manifest, choice, part, value, against) => {
          const copy = jsonCopy(manifest) as { handlers: Record<string, unknown>[] };
          const index = choice % copy.handlers.length;
          setAtPath(copy.handlers[index] as Record<string, unknown>, part, value);
          const text = JSON.stringify(copy).replace(JSON.stringify(INFINITE), '1e999');
          const sent = received(text);
          let parsed: Manifest;
          try {
            parsed = parseManifest(sent).manifest;
          } catch (error) {
            assert.ok(error instanceof ProtocolError || error instanceof ScopeError, `${error}`);
            assert.ok(
              error.message.startsWith(`manifest.handlers[${index}]`),
              `${error.message} names handler ${index}`,
            );
            return;
          }
          // A handler of a kind the gateway does not know is skipped (and named), whatever it holds.
          const kept = { ...copy, handlers: copy.handlers.filter((handler) => isHandlerKind(handler.kind)) };
          assert.ok(
            manifestSchema(received(JSON.stringify(kept).replace(JSON.stringify(INFINITE), '1e999'))),
            `taken, though the schema refuses it: ${JSON.stringify(manifestSchema.errors)}`,
          );
          matchAll(parsed.handlers, against);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
