import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { callableFor, type HandlerKind, type Reason } from '../protocol/index.ts';
import { ABSENT, PRESENT } from './filters.ts';
import { createRegistry, specOf } from './registry.ts';

describe('registration', () => {
  it('takes the id from the function name, or from the id option', () => {
    const { on, handlers } = createRegistry();
    on.create('kopfexamples', function create_fn() {});
    const arrow = () => {};
    on.create('kex', arrow);
    on.create('kopfexamples.kopf.dev', { id: 'explicit' }, () => {});
    assert.deepEqual(
      [...handlers.values()].map(({ id, kind, resource }) => ({ id, kind, resource })),
      [
        { id: 'create_fn', kind: 'create', resource: { name: 'kopfexamples' } },
        { id: 'arrow', kind: 'create', resource: { name: 'kex' } },
        { id: 'explicit', kind: 'create', resource: { group: 'kopf.dev', name: 'kopfexamples' } },
      ],
    );
  });

  it('refuses an anonymous handler without an id', () => {
    const { on } = createRegistry();
    assert.throws(() => on.create('kex', () => {}), /anonymous handler needs an id/);
  });

  it('refuses a duplicate id, whether from names or options', () => {
    const { on } = createRegistry();
    on.create('kex', function create_fn() {});
    assert.throws(() => on.create('pods', function create_fn() {}), /"create_fn" is already registered/);
    assert.throws(
      () => on.create('pods', { id: 'create_fn' }, () => {}),
      /"create_fn" is already registered/,
    );
  });

  it('refuses ids that cannot name a status field, options it does not know, and non-functions', () => {
    const { on } = createRegistry();
    assert.throws(
      () => on.create('kex', function f() {}.bind(null)),
      /"bound f" must be a word of 1 to 253 characters, without whitespace/,
    );
    assert.throws(() => on.create('kex', { id: '' }, () => {}), /"id" must be a non-empty string/);
    assert.throws(() => on.create('kex', { colour: 'red' } as never, () => {}), /unknown option "colour"/);
    assert.throws(() => on.create('kex', 'create_fn' as never), /the handler must be a function/);
  });

  it('publishes a timer with its schedule, and refuses one without an interval or with a negative delay', () => {
    const { on, handlers } = createRegistry();
    on.timer('kex', { interval: 5, idle: 10, initialDelay: 1, sharp: true }, function tick() {});
    assert.deepEqual(specOf(handlers.get('tick') as never).options, {
      interval: 5,
      idle: 10,
      initialDelay: 1,
      sharp: true,
    });
    assert.throws(
      () => on.timer('kex', function untimed() {}),
      /"interval" must be a number of seconds above 0/,
    );
    assert.throws(
      () => on.timer('kex', { interval: 1, idle: -1 }, function early() {}),
      /"idle" must be a number of seconds from 0 to 31536000 \(a year\)/,
    );
    assert.throws(
      () => on.create('kex', { interval: 1 } as never, function f() {}),
      /unknown option "interval"/,
    );
  });

  it('offers exactly the kinds the protocol defines', () => {
    assert.deepEqual(Object.keys(createRegistry().on).sort(), [
      'create',
      'daemon',
      'delete',
      'event',
      'field',
      'index',
      'mutate',
      'reconcile',
      'resume',
      'timer',
      'update',
      'validate',
    ]);
  });
});

function manifestOf(registry: ReturnType<typeof createRegistry>) {
  return [...registry.handlers.values()].map(specOf);
}

const REASONS: Reason[] = [
  'create',
  'update',
  'delete',
  'resume',
  'event',
  'reconcile',
  'timer',
  'daemon',
  'admission',
  'index',
];

describe('kinds', () => {
  it('registers every kind under its own name, due for the reasons it answers', () => {
    const registry = createRegistry();
    const { on } = registry;
    on.create('kex', function on_create() {});
    on.update('kex', function on_update() {});
    on.delete('kex', function on_delete() {});
    on.resume('kex', function on_resume() {});
    on.field('kex', 'spec.field', function on_field() {});
    on.event('kex', function on_event() {});
    on.reconcile('kex', function on_reconcile() {});
    on.timer('kex', { interval: 1 }, function on_timer() {});
    on.daemon('kex', function on_daemon() {});
    on.validate('kex', function on_validate() {});
    on.mutate('kex', function on_mutate() {});
    on.index('kex', function on_index() {});
    assert.deepEqual(
      manifestOf(registry).map(({ id, kind }) => [id, kind]),
      [
        ['on_create', 'create'],
        ['on_update', 'update'],
        ['on_delete', 'delete'],
        ['on_resume', 'resume'],
        ['on_field/spec.field', 'field'],
        ['on_event', 'event'],
        ['on_reconcile', 'reconcile'],
        ['on_timer', 'timer'],
        ['on_daemon', 'daemon'],
        ['on_validate', 'validate'],
        ['on_mutate', 'mutate'],
        ['on_index', 'index'],
      ],
    );
    const answered = Object.fromEntries(
      (Object.keys(on) as HandlerKind[]).map((kind) => [kind, REASONS.filter((r) => callableFor(kind, r))]),
    );
    assert.deepEqual(answered, {
      create: ['create'],
      update: ['update'],
      delete: ['delete'],
      resume: ['create', 'update', 'delete', 'resume'],
      field: ['create', 'update'],
      event: ['event'],
      reconcile: ['reconcile'],
      timer: ['timer'],
      daemon: ['daemon'],
      validate: ['admission'],
      mutate: ['admission'],
      index: ['index'],
    });
  });

  it('publishes declarative filters and options, and nothing empty', () => {
    const registry = createRegistry();
    const { on } = registry;
    on.update(
      'kex',
      {
        id: 'u',
        labels: { app: 'demo', tier: PRESENT, legacy: ABSENT },
        annotations: { note: 'x' },
        field: 'spec.replicas',
        old: ABSENT,
        new: PRESENT,
        retries: 3,
        timeout: 600,
        backoff: 5,
      },
      () => {},
    );
    on.create('kex', { id: 'c', field: 'spec.items', value: ['a', 'b'] }, () => {});
    on.create('kex', { id: 'c0', field: 'spec.count', value: 0, backoff: 0 }, () => {});
    on.delete('kex', { id: 'd', optional: true }, () => {});
    on.resume('kex', { id: 'r', deleted: false }, () => {});
    on.event('kex', { id: 'e', annotations: { seen: ABSENT } }, () => {});
    on.reconcile('kex', { id: 'plain', param: { any: 'thing' } }, () => {});
    assert.deepEqual(manifestOf(registry), [
      {
        id: 'u',
        kind: 'update',
        resource: { name: 'kex' },
        filters: {
          labels: { app: 'demo', tier: { present: true }, legacy: { absent: true } },
          annotations: { note: 'x' },
          field: 'spec.replicas',
          old: { absent: true },
          new: { present: true },
        },
        options: { retries: 3, timeout: 600, backoff: 5 },
      },
      {
        id: 'c',
        kind: 'create',
        resource: { name: 'kex' },
        filters: { field: 'spec.items', value: { equals: ['a', 'b'] } },
      },
      {
        id: 'c0',
        kind: 'create',
        resource: { name: 'kex' },
        filters: { field: 'spec.count', value: { equals: 0 } },
        options: { backoff: 0 },
      },
      { id: 'd', kind: 'delete', resource: { name: 'kex' }, options: { optional: true } },
      { id: 'r', kind: 'resume', resource: { name: 'kex' }, options: { deleted: false } },
      {
        id: 'e',
        kind: 'event',
        resource: { name: 'kex' },
        filters: { annotations: { seen: { absent: true } } },
      },
      { id: 'plain', kind: 'reconcile', resource: { name: 'kex' } },
    ]);
  });

  it('leaves callbacks out of the declarative filters and says when: true instead', () => {
    const registry = createRegistry();
    const { on } = registry;
    const yes = () => true;
    on.create('kex', { id: 'mixed', labels: { app: 'demo', tier: yes } }, () => {});
    on.create('kex', { id: 'onlyCallback', annotations: { note: yes } }, () => {});
    on.update('kex', { id: 'value', field: 'spec.replicas', value: yes }, () => {});
    on.field('kex', 'spec.size', { id: 'change', old: yes, new: 3 }, () => {});
    on.reconcile('kex', { id: 'when', when: yes }, () => {});
    on.create('kex', { id: 'none', labels: { app: 'demo' } }, () => {});
    const filters = Object.fromEntries(manifestOf(registry).map(({ id, filters }) => [id, filters]));
    assert.deepEqual(filters, {
      mixed: { labels: { app: 'demo' }, when: true },
      onlyCallback: { when: true },
      value: { field: 'spec.replicas', when: true },
      change: { field: 'spec.size', new: { equals: 3 }, when: true },
      when: { when: true },
      none: { labels: { app: 'demo' } },
    });
    for (const [id, handler] of registry.handlers) {
      assert.equal(typeof handler.applies, id === 'none' ? 'undefined' : 'function', id);
    }
  });

  it('refuses the options a kind does not take, listing the ones it does', () => {
    const { on } = createRegistry();
    const fn = () => {};
    assert.throws(
      () => on.create('kex', { id: 'x', old: 1 } as never, fn),
      /^TypeError: on\.create: unknown option "old"; known options: id, param, labels, annotations, value, when, field, retries, timeout, backoff, indexes, errors$/,
    );
    assert.throws(
      () => on.create('kex', { optional: true } as never, fn),
      /on\.create: unknown option "optional"/,
    );
    assert.throws(
      () => on.update('kex', { deleted: true } as never, fn),
      /on\.update: unknown option "deleted"/,
    );
    assert.throws(
      () => on.delete('kex', { deleted: true } as never, fn),
      /on\.delete: unknown option "deleted"/,
    );
    assert.throws(
      () => on.resume('kex', { optional: true } as never, fn),
      /on\.resume: unknown option "optional"/,
    );
    assert.throws(() => on.event('kex', { retries: 3 } as never, fn), /on\.event: unknown option "retries"/);
    assert.throws(() => on.event('kex', { backoff: 3 } as never, fn), /on\.event: unknown option "backoff"/);
    assert.throws(() => on.reconcile('kex', { new: 3 } as never, fn), /on\.reconcile: unknown option "new"/);
    assert.throws(
      () => on.field('kex', 'spec.a', { field: 'spec.b' } as never, fn),
      /on\.field: unknown option "field"/,
    );
    assert.throws(() => on.create('kex', null as never, fn), /options must be an object/);
  });

  it('refuses malformed options at registration', () => {
    const { on } = createRegistry();
    const fn = () => {};
    const cases: [string, () => void, RegExp][] = [
      ['no retries', () => on.create('kex', { retries: 0 }, fn), /"retries" must be a whole number/],
      [
        'fractional retries',
        () => on.create('kex', { retries: 1.5 }, fn),
        /"retries" must be a whole number/,
      ],
      [
        'zero timeout',
        () => on.update('kex', { timeout: 0 }, fn),
        /"timeout" must be a number of seconds above 0/,
      ],
      [
        'a timeout over a year, which the gateway would refuse',
        () => on.update('kex', { timeout: 366 * 24 * 3600 }, fn),
        /"timeout" must be a number of seconds above 0, at most 31536000 \(a year\)/,
      ],
      [
        'negative backoff',
        () => on.delete('kex', { backoff: -1 }, fn),
        /"backoff" must be a number of seconds from 0/,
      ],
      [
        'NaN backoff',
        () => on.delete('kex', { backoff: Number.NaN }, fn),
        /"backoff" must be a number of seconds from 0/,
      ],
      [
        'a timer a year and a day apart',
        () => on.timer('kex', { interval: 366 * 24 * 3600 }, fn),
        /"interval" must be a number of seconds above 0, at most 31536000 \(a year\)/,
      ],
      ['a string flag', () => on.delete('kex', { optional: 'yes' as never }, fn), /"optional" must be true/],
      [
        'labels as a list',
        () => on.create('kex', { labels: ['app'] as never }, fn),
        /"labels" must be an object/,
      ],
      [
        'a label as a number',
        () => on.create('kex', { labels: { app: 1 as never } }, fn),
        /labels\["app"\] must be a string, PRESENT, ABSENT or a function, got 1/,
      ],
      [
        'a label key Kubernetes refuses, as the gateway would',
        () => on.validate('kex', { labels: { 'bad key': 'x' } }, fn),
        /labels\["bad key"\]: the key must be a label's key \(\[prefix\/\]name/,
      ],
      [
        'a label value Kubernetes refuses, as the gateway would',
        () => on.create('kex', { labels: { app: 'a,b' } }, fn),
        /labels\["app"\] must be a label's value \(63 letters/,
      ],
      [
        'a label key too long, even with a callback',
        () => on.create('kex', { labels: { ['x'.repeat(64)]: () => true } }, fn),
        /the key must be a label's key/,
      ],
      [
        'an annotation key Kubernetes refuses',
        () => on.create('kex', { annotations: { 'a/b/c': 'x' } }, fn),
        /annotations\["a\/b\/c"\]: the key must be an annotation's key/,
      ],
      [
        'an id longer than the gateway takes',
        () => on.create('kex', { id: 'x'.repeat(254) }, fn),
        /must be a word of 1 to 253 characters, without whitespace/,
      ],
      ['value without field', () => on.create('kex', { value: 1 }, fn), /option "value" needs a "field"/],
      ['old without field', () => on.update('kex', { old: 1 }, fn), /option "old" needs a "field"/],
      [
        'value with new',
        () => on.update('kex', { field: 'spec.a', value: 1, new: 2 }, fn),
        /"value" and "old"\/"new" exclude each other/,
      ],
      [
        'a value JSON cannot hold',
        () => on.create('kex', { field: 'spec.a', value: { n: 1n } as never }, fn),
        /option "value" must be a JSON value.*"n" is a bigint/,
      ],
      ['when as a boolean', () => on.create('kex', { when: true as never }, fn), /"when" must be a function/],
      [
        'an empty field',
        () => on.create('kex', { field: '' }, fn),
        /dotted path such as 'spec.replicas', got ""/,
      ],
      ['an empty part', () => on.create('kex', { field: 'spec..a' }, fn), /dotted path/],
    ];
    for (const [what, register, error] of cases) assert.throws(register, error, what);
  });
});

describe('on.field', () => {
  it('takes the field before the options, as Kopf does', () => {
    const registry = createRegistry();
    const { on } = registry;
    on.field('kex', 'spec.replicas', function scale() {});
    on.field('kex', 'spec.size', { retries: 2, old: PRESENT, param: 'size' }, function scale() {});
    assert.deepEqual(manifestOf(registry), [
      {
        id: 'scale/spec.replicas',
        kind: 'field',
        resource: { name: 'kex' },
        filters: { field: 'spec.replicas' },
      },
      {
        id: 'scale/spec.size',
        kind: 'field',
        resource: { name: 'kex' },
        filters: { field: 'spec.size', old: { present: true } },
        options: { retries: 2 },
      },
    ]);
    assert.equal(registry.handlers.get('scale/spec.size')?.param, 'size');
  });

  it('keeps an explicit id as it is, and suffixes a derived one with any field', () => {
    const registry = createRegistry();
    registry.on.field('kex', 'spec.a', { id: 'explicit' }, () => {});
    registry.on.update('kex', { field: 'spec.b' }, function changed() {});
    registry.on.update('kex', function changed() {});
    assert.deepEqual([...registry.handlers.keys()], ['explicit', 'changed/spec.b', 'changed']);
  });

  it('refuses a missing field, a missing handler, and extra arguments', () => {
    // As plain JavaScript could call it; TypeScript refuses these calls already.
    const field = createRegistry().on.field as (...args: unknown[]) => void;
    assert.throws(() => field('kex', function f() {}), /on\.field: the field must be a dotted path/);
    assert.throws(
      () => field('kex', 'spec.a'),
      /expected \(resource, field, options\?, handler\), got 2 arguments/,
    );
    assert.throws(() => field('kex', 'spec.a', {}, () => {}, 'extra'), /got 5 arguments/);
  });
});

describe('the errors option', () => {
  it('is taken by the kinds that are retried, kept in the service, and not published', () => {
    const registry = createRegistry();
    const { on } = registry;
    const fn = () => {};
    on.create('kex', { id: 'create', errors: 'permanent' }, fn);
    on.update('kex', { id: 'update', errors: 'ignored' }, fn);
    on.delete('kex', { id: 'delete', errors: 'temporary' }, fn);
    on.resume('kex', { id: 'resume', errors: 'ignored' }, fn);
    on.field('kex', 'spec.a', { id: 'field', errors: 'permanent' }, fn);
    on.reconcile('kex', { id: 'reconcile', errors: 'ignored' }, fn);
    on.timer('kex', { id: 'timer', interval: 1, errors: 'permanent' }, fn);
    on.daemon('kex', { id: 'daemon', errors: 'ignored', backoff: 2 }, fn);
    on.create('kex', { id: 'default' }, fn);
    assert.deepEqual(
      Object.fromEntries([...registry.handlers].map(([id, handler]) => [id, handler.errors])),
      {
        create: 'permanent',
        update: 'ignored',
        delete: 'temporary',
        resume: 'ignored',
        field: 'permanent',
        reconcile: 'ignored',
        timer: 'permanent',
        daemon: 'ignored',
        default: undefined,
      },
    );
    for (const handler of registry.handlers.values()) {
      assert.equal(JSON.stringify(specOf(handler)).includes('errors'), false, handler.id);
    }
    assert.deepEqual(specOf(registry.handlers.get('daemon') as never).options, { backoff: 2 });
  });

  it('is refused by event and admission handlers, and when it is not a mode', () => {
    const { on } = createRegistry();
    const fn = () => {};
    assert.throws(
      // @ts-expect-error: the types refuse it too
      () => on.event('kex', { errors: 'ignored' }, fn),
      /on\.event: unknown option "errors"/,
    );
    assert.throws(
      () => on.validate('kex', { errors: 'permanent' } as never, fn),
      /on\.validate: unknown option "errors"/,
    );
    assert.throws(
      () => on.mutate('kex', { errors: 'ignored' } as never, fn),
      /on\.mutate: unknown option "errors"/,
    );
    for (const errors of ['IGNORED', 'fatal', true, null]) {
      assert.throws(
        () => on.create('kex', { id: 'x', errors: errors as never }, fn),
        /^TypeError: on\.create: option "errors" must be 'temporary', 'permanent' or 'ignored'$/,
        String(errors),
      );
    }
  });
});
