/**
 * What every module of the gateway is made with: its options, as given; its logger, identity and
 * settings, with their defaults; the signal aborted once it stops; and the manager its parts join.
 */
import { DEFAULT_IDENTITY, type Identity } from '../identity.ts';
import { createLogger, type Logger } from '../logging.ts';
import { Manager } from '../manager/manager.ts';
import type { GatewayOptions } from '../options.ts';
import { type Settings, settingsWith } from '../settings.ts';

export interface Ground {
  readonly options: GatewayOptions;
  readonly logger: Logger;
  readonly identity: Identity;
  readonly settings: Settings;
  /** Aborted at once when the gateway is asked to stop, before its parts stop. */
  readonly stopping: AbortController;
  readonly manager: Manager;
}

export function groundOf(options: GatewayOptions): Ground {
  const logger = options.logger ?? createLogger();
  return {
    options,
    logger,
    identity: { ...DEFAULT_IDENTITY, ...options.identity },
    settings: settingsWith(options.settings),
    stopping: new AbortController(),
    manager: new Manager(logger),
  };
}

/**
 * A debug line as the start passes a step, with the time since the process started: `--verbose` shows
 * where a start's time goes (bench/start-timeline.ts reads these lines).
 */
export function startStep(logger: Logger, step: string): void {
  logger.debug(`start: ${step}`, { sinceProcessStartMs: Math.round(performance.now()) });
}
