import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger, type Logger, type LoggerOptions, REDACTION } from './logging.ts';

function logged(write: (logger: Logger) => void, options: LoggerOptions = {}): string[] {
  const lines: string[] = [];
  write(createLogger({ level: 'debug', ...options, sink: { write: (line) => lines.push(line) } }));
  return lines;
}

/** A text line without its time and level. */
const body = (line: string) => line.replace(/^\S+ \S+\s+/, '');

describe('the logger, as text', () => {
  it('writes time, level, [object], the message, then the fields', () => {
    const [line] = logged((logger) =>
      logger
        .child({ resource: 'kopfexamples.kopf.dev/v1' })
        .child({ object: 'default/example-1' })
        .warning('handler failed temporarily', { handler: 'create_fn', retry: 2, err: 'not yet: 3 left' }),
    );
    assert.match(
      line as string,
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z WARNING \[default\/example-1\] handler failed temporarily /,
    );
    assert.equal(
      body(line as string),
      '[default/example-1] handler failed temporarily resource=kopfexamples.kopf.dev/v1 handler=create_fn retry=2 err="not yet: 3 left"\n',
    );
  });

  it('writes one line per message: a newline in a message is shown escaped, and forges no line', () => {
    const lines = logged((logger) =>
      logger.info('handler said: done\n2026-01-01T00:00:00.000Z ERROR   [causeway] all webhooks disabled'),
    );
    assert.equal(lines.length, 1);
    assert.equal(lines[0]?.split('\n').length, 2, 'one line and its end');
    assert.equal(
      body(lines[0] as string),
      'handler said: done\\n2026-01-01T00:00:00.000Z ERROR   [causeway] all webhooks disabled\n',
    );
  });

  it('escapes every control character of the message, the object and the fields: C0, DEL, C1, and the line and paragraph separators', () => {
    const [line] = logged((logger) =>
      logger
        .child({ object: 'svc\r\nfake' })
        .child({ webhook: '/a\u2028b' })
        .warning(
          'tab\there, cr\rthere, \u001b[31mred\u001b[0m, nul\u0000, del\u007f, csi\u009b, para\u2029end',
        ),
    );
    assert.equal(
      body(line as string),
      '[svc\\r\\nfake] tab\\there, cr\\rthere, \\u001b[31mred\\u001b[0m, nul\\u0000, del\\u007f, csi\\u009b, para\\u2029end webhook="/a\\u2028b"\n',
    );
  });

  it('leaves printable text as it is, non-ASCII included', () => {
    const [line] = logged((logger) => logger.error('kopfexample "ü-1" → 3 × retried \\n literal'));
    assert.equal(body(line as string), 'kopfexample "ü-1" → 3 × retried \\n literal\n');
  });

  it('writes nothing below its level', () => {
    const lines = logged(
      (logger) => {
        logger.debug('not this');
        logger.info('nor this');
        logger.warning('this');
      },
      { level: 'warning' },
    );
    assert.deepEqual(lines.map(body), ['this\n']);
  });
});

describe("the logger's children", () => {
  it('write below their level nothing, and at it every field of theirs and their parents, however late', () => {
    const lines = logged(
      (logger) => {
        const parent = logger.child({ resource: 'kopfexamples.kopf.dev/v1' });
        const quiet = parent.child({ object: 'ns/quiet' });
        const late = parent.child({ object: 'ns/late' });
        quiet.debug('below the level');
        parent.info('the parent first');
        late.warning('the child later', { handler: 'create_fn' });
        quiet.info('now at it');
      },
      { level: 'info' },
    );
    assert.deepEqual(lines.map(body), [
      'the parent first resource=kopfexamples.kopf.dev/v1\n',
      '[ns/late] the child later resource=kopfexamples.kopf.dev/v1 handler=create_fn\n',
      '[ns/quiet] now at it resource=kopfexamples.kopf.dev/v1\n',
    ]);
  });
});

describe('the logger, as JSON', () => {
  it('writes one JSON object per line, with the level by name, the time, the message and every field', () => {
    const lines = logged(
      (logger) => {
        const log = logger.child({ resource: 'kopfexamples.kopf.dev/v1' }).child({ object: 'ns/one' });
        log.info('handler succeeded', { handler: 'create_fn', retry: 0, idempotencyKey: 'k', traceId: 't' });
        log.error('handler failed\npermanently', { err: new TypeError('bad\nthing') });
      },
      { format: 'json' },
    );
    assert.equal(lines.length, 2);
    const [first, second] = lines.map((line) => {
      assert.ok(line.endsWith('\n') && line.indexOf('\n') === line.length - 1, 'one line each');
      return JSON.parse(line) as Record<string, unknown>;
    });
    assert.match(String(first?.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.deepEqual(
      { ...first, time: undefined },
      {
        level: 'info',
        time: undefined,
        resource: 'kopfexamples.kopf.dev/v1',
        object: 'ns/one',
        handler: 'create_fn',
        retry: 0,
        idempotencyKey: 'k',
        traceId: 't',
        msg: 'handler succeeded',
      },
    );
    assert.equal(second?.level, 'error');
    assert.equal(second?.msg, 'handler failed\npermanently');
    assert.deepEqual(second?.err, { type: 'TypeError', message: 'bad\nthing' });
  });

  it('never writes a credential or a Secret’s data given as a field, at the top or one level down', () => {
    const [line] = logged(
      (logger) =>
        logger.warning('applying the object failed', {
          token: 'top-secret-token',
          child: { kind: 'Secret', data: { password: 'c2VjcmV0' }, stringData: { password: 'hunter2' } },
        }),
      { format: 'json' },
    );
    assert.doesNotMatch(line as string, /top-secret-token|c2VjcmV0|hunter2/);
    const parsed = JSON.parse(line as string);
    assert.equal(parsed.token, REDACTION);
    assert.deepEqual(parsed.child, { kind: 'Secret', data: REDACTION, stringData: REDACTION });
  });
});
