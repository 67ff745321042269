/**
 * The gateway's log: constant messages with Kubernetes' structured-logging keys (`object` as ns/name,
 * `resource`, `handler`, `cause`, `retry`, `idempotencyKey`, `traceId`, `err`), written by pino as
 * JSON lines for a log pipeline, or as text lines for a person at a terminal.
 */
import { pino } from 'pino';
import type { LogLevel } from '../protocol/index.ts';

/** What a line is about, beside its message. Values are strings, numbers, booleans or lists of them. */
export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warning(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  log(level: LogLevel, message: string, fields?: LogFields): void;
  /** A logger whose lines all carry these fields, e.g. `{ object: 'default/kopf-example-1' }`. */
  child(fields: LogFields): Logger;
}

/** `text`: a line a person reads; `json`: one JSON object per line, for a log pipeline. */
export type LogFormat = 'text' | 'json';

export interface LogSink {
  write(line: string): void;
}

export interface LoggerOptions {
  level?: LogLevel;
  format?: LogFormat;
  /** Where the lines go, each ending in a newline: stderr by default. */
  sink?: LogSink;
}

/**
 * Fields never written as they are, wherever they appear at the top or one level down: credentials
 * and a Secret's data, should one reach a log line through an error or a child object.
 */
const REDACTED = ['authorization', 'token', 'password', 'secret', 'data', 'stringData', 'privateKey'];
export const REDACTION = '[redacted]';

const LEVELS: Record<LogLevel, number> = { debug: 20, info: 30, warning: 40, error: 50 };

export function createLogger(options: LoggerOptions = {}): Logger {
  const sink = options.sink ?? { write: (line: string) => process.stderr.write(line) };
  const destination =
    options.format === 'json' ? sink : { write: (line: string) => sink.write(asText(line)) };
  const engine = pino<keyof typeof LEVELS, true>(
    {
      level: options.level ?? 'info',
      customLevels: LEVELS,
      useOnlyCustomLevels: true,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: errorFields },
      redact: { paths: REDACTED.flatMap((key) => [key, `*.${key}`]), censor: REDACTION },
    },
    destination,
  );
  return wrap(
    () => engine,
    (level) => engine.isLevelEnabled(level),
  );
}

type Engine = pino.Logger<keyof typeof LEVELS, boolean>;

/**
 * A child's pino logger is made at its first line written: a cycle makes a child for each object,
 * and at the usual levels most of them write nothing. Children share their root's level.
 */
function wrap(engineOf: () => Engine, enabled: (level: LogLevel) => boolean): Logger {
  const log = (level: LogLevel, message: string, fields?: LogFields) => {
    if (!enabled(level)) return;
    const engine = engineOf();
    if (fields) engine[level](fields, message);
    else engine[level](message);
  };
  return {
    log,
    debug: (message, fields) => log('debug', message, fields),
    info: (message, fields) => log('info', message, fields),
    warning: (message, fields) => log('warning', message, fields),
    error: (message, fields) => log('error', message, fields),
    child: (fields) => {
      let child: Engine | undefined;
      return wrap(() => (child ??= engineOf().child(fields)), enabled);
    },
  };
}

/** An error as a line shows it: what it says, and its kind when it is not a plain Error. */
function errorFields(error: unknown): unknown {
  if (!(error instanceof Error)) return String(error);
  return error.name === 'Error' ? error.message : { type: error.name, message: error.message };
}

/**
 * A JSON line as text: time, level, `[object]`, message, then the other fields as `key=value`, a
 * string value quoted when it has a space, a quote or an `=` in it.
 */
function asText(json: string): string {
  const { time, level, msg, object, ...fields } = JSON.parse(json) as Record<string, unknown>;
  let line = `${time} ${String(level).toUpperCase().padEnd(7)} `;
  if (object !== undefined) line += `[${escapeControls(String(object))}] `;
  line += escapeControls(String(msg ?? ''));
  for (const [key, value] of Object.entries(fields)) line += ` ${key}=${textValue(value)}`;
  return `${line}\n`;
}

function textValue(value: unknown): string {
  // An error of a kind of its own is shown by what it says, as a plain one is.
  if (typeof value === 'object' && value !== null && 'message' in value) value = String(value.message);
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return escapeControls(typeof value === 'string' && /[\s"=]|^$/.test(text) ? JSON.stringify(text) : text);
}

/**
 * C0 and C1 controls, DEL, and the line and paragraph separators. Messages carry what services and
 * clients sent (a service's log line, a webhook's path): a raw newline there would forge a log line of
 * the gateway's, and an escape sequence would rewrite the terminal showing it.
 */
const CONTROLS = /[\p{Cc}\u2028\u2029]/gu;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** `text` on one line, each control character written as its escape (`\n`, `\u001b`). */
export function escapeControls(text: string): string {
  return text.replace(
    CONTROLS,
    (control) => NAMED[control] ?? `\\u${control.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
