/** Human-readable log lines on stderr: time, level, the object they are about, message. */
import type { LogLevel } from '../protocol/index.ts';

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warning: 2, error: 3 };

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warning(message: string): void;
  error(message: string): void;
  log(level: LogLevel, message: string): void;
  /** A logger whose lines name what they are about, e.g. `[default/kopf-example-1]`. */
  child(scope: string): Logger;
}

export interface LogSink {
  write(line: string): void;
}

export function createLogger(options: { level?: LogLevel; sink?: LogSink; scope?: string } = {}): Logger {
  const threshold = RANK[options.level ?? 'info'];
  const sink = options.sink ?? { write: (line: string) => process.stderr.write(line) };
  const prefix = options.scope ? `[${escapeControls(options.scope)}] ` : '';
  const log = (level: LogLevel, message: string) => {
    if (RANK[level] < threshold) return;
    const line = `${new Date().toISOString()} ${level.toUpperCase().padEnd(7)} ${prefix}${escapeControls(message)}`;
    sink.write(`${line}\n`);
  };
  return {
    log,
    debug: (message) => log('debug', message),
    info: (message) => log('info', message),
    warning: (message) => log('warning', message),
    error: (message) => log('error', message),
    child: (scope) =>
      createLogger({ ...options, scope: options.scope ? `${options.scope}] [${scope}` : scope }),
  };
}

/**
 * C0 and C1 controls, DEL, and the line and paragraph separators. Messages carry what services and
 * clients sent (a service's log line, a webhook's path): a raw newline there would forge a log line of
 * the gateway's, and an escape sequence would rewrite the terminal showing it.
 */
const CONTROLS = /[\p{Cc}\u2028\u2029]/gu;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** `text` on one line, each control character written as its escape (`\n`, `\u001b`). */
function escapeControls(text: string): string {
  return text.replace(
    CONTROLS,
    (control) => NAMED[control] ?? `\\u${control.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
