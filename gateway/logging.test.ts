import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from './logging.ts';

function logged(write: (logger: ReturnType<typeof createLogger>) => void): string[] {
  const lines: string[] = [];
  write(createLogger({ level: 'debug', sink: { write: (line) => lines.push(line) } }));
  return lines;
}

/** A line without its time and level. */
const body = (line: string) => line.replace(/^\S+ \S+\s+/, '');

describe('the logger', () => {
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

  it('escapes every control character of the message and the scope: C0, DEL, C1, and the line and paragraph separators', () => {
    const [line] = logged((logger) =>
      logger
        .child('svc\r\nfake')
        .child('webhook /a\u2028b')
        .warning(
          'tab\there, cr\rthere, \u001b[31mred\u001b[0m, nul\u0000, del\u007f, csi\u009b, para\u2029end',
        ),
    );
    assert.equal(
      body(line as string),
      '[svc\\r\\nfake] [webhook /a\\u2028b] tab\\there, cr\\rthere, \\u001b[31mred\\u001b[0m, nul\\u0000, del\\u007f, csi\\u009b, para\\u2029end\n',
    );
  });

  it('leaves printable text as it is, non-ASCII included', () => {
    const [line] = logged((logger) => logger.error('kopfexample "ü-1" → 3 × retried \\n literal'));
    assert.equal(body(line as string), 'kopfexample "ü-1" → 3 × retried \\n literal\n');
  });
});
