import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../logging.ts';
import { startStep } from './ground.ts';

describe('the start, step by step', () => {
  it('says each step at the debug level, with the time since the process started', () => {
    const lines: string[] = [];
    const logger = createLogger({
      level: 'debug',
      format: 'json',
      sink: { write: (line) => lines.push(line) },
    });
    const before = performance.now();
    startStep(logger, 'function services connected');
    const [line] = lines.map((each) => JSON.parse(each));
    assert.equal(line.level, 'debug');
    assert.equal(line.msg, 'start: function services connected');
    assert.ok(Number.isInteger(line.sinceProcessStartMs));
    assert.ok(
      line.sinceProcessStartMs >= Math.floor(before) && line.sinceProcessStartMs <= performance.now() + 1,
    );
  });

  it('writes nothing at the default level', () => {
    const lines: string[] = [];
    startStep(createLogger({ sink: { write: (line) => lines.push(line) } }), 'every part started');
    assert.deepEqual(lines, []);
  });
});
