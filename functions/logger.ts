import type { LogLevel, LogLine } from '../protocol/index.ts';

/** Lines go back to the gateway in the response, which logs them next to the object; nothing is printed here. */
export type Logger = Record<LogLevel, (message: string) => void>;

export function collectingLogger(lines: LogLine[], handler: string): Logger {
  const at = (level: LogLevel) => (message: string) => {
    lines.push({ level, message: String(message), handler });
  };
  return { debug: at('debug'), info: at('info'), warning: at('warning'), error: at('error') };
}
