import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { logFormat, logLevel } from './logging.ts';

describe('logLevel', () => {
  it('defaults to info', () => {
    assert.equal(logLevel({}), 'info');
    assert.equal(logLevel({ verbose: true }), 'debug');
    assert.equal(logLevel({ quiet: true }), 'warning');
  });

  it('takes the level --log-level names, and refuses another or a second way to say it', () => {
    assert.equal(logLevel({ 'log-level': 'error' }), 'error');
    assert.throws(
      () => logLevel({ 'log-level': 'trace' }),
      /--log-level expects one of debug, info, warning, error, got "trace"/,
    );
    assert.throws(() => logLevel({ 'log-level': 'info', verbose: true }), /drop --verbose and --quiet/);
  });
});

describe('logFormat', () => {
  it('is text on a terminal and JSON elsewhere, unless --log-format says which', () => {
    assert.equal(logFormat({}, true, undefined), 'text');
    assert.equal(logFormat({}, false, undefined), 'json');
    assert.equal(logFormat({ 'log-format': 'auto' }, true, undefined), 'text');
    assert.equal(logFormat({ 'log-format': 'json' }, true, undefined), 'json');
    assert.equal(logFormat({ 'log-format': 'text' }, false, undefined), 'text');
  });

  it('takes CAUSEWAY_LOG_FORMAT where --log-format says nothing', () => {
    assert.equal(logFormat({}, false, 'text'), 'text');
    assert.equal(logFormat({ 'log-format': 'json' }, false, 'text'), 'json');
    assert.throws(
      () => logFormat({}, true, 'xml'),
      /CAUSEWAY_LOG_FORMAT expects text, json or auto, got "xml"/,
    );
    assert.throws(
      () => logFormat({ 'log-format': 'yaml' }, true, undefined),
      /--log-format expects text, json or auto, got "yaml"/,
    );
  });
});
