/** The logging flags every command takes (COMMON in command-line.ts), read. */
import type { LogLevel } from '../../../protocol/index.ts';
import type { LogFormat } from '../../logging.ts';
import { type COMMON, type GroupValues, UsageError } from '../command-line.ts';

export function logLevel(values: GroupValues<typeof COMMON>): LogLevel {
  const given = values['log-level'];
  if (given !== undefined) {
    if (!LOG_LEVELS.includes(given as LogLevel))
      throw new UsageError(`--log-level expects one of ${LOG_LEVELS.join(', ')}, got "${given}"`);
    if (values.verbose || values.quiet)
      throw new UsageError('--log-level says it all: drop --verbose and --quiet');
    return given as LogLevel;
  }
  if (values.verbose) return 'debug';
  return values.quiet ? 'warning' : 'info';
}

const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warning', 'error'];

/**
 * `auto` is text where a person reads stderr (a terminal), JSON where a program does. The flag wins
 * over CAUSEWAY_LOG_FORMAT, which sets it for every command of a container or a shell.
 */
export function logFormat(
  values: GroupValues<typeof COMMON>,
  terminal: boolean,
  environment: string | undefined,
): LogFormat {
  const given = values['log-format'] ?? environment ?? 'auto';
  if (given === 'auto') return terminal ? 'text' : 'json';
  if (given === 'text' || given === 'json') return given;
  const source = values['log-format'] === undefined ? 'CAUSEWAY_LOG_FORMAT' : '--log-format';
  throw new UsageError(`${source} expects text, json or auto, got "${given}"`);
}
