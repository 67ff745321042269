/** What the commands take from the process around them: the files their flags name, and the signals that stop them. */
import { readFileSync } from 'node:fs';
import type { Logger } from '../logging.ts';

/** A file's text, for options.ts, which reads none itself. */
export function readText(path: string): string {
  return readFileSync(path, 'utf8');
}

/** Resolves on the first SIGINT or SIGTERM; a second one exits at once. */
export function untilSignal(logger: Logger): Promise<void> {
  return new Promise((resolve) => {
    const stop = (signal: string) => {
      logger.info(`${signal} received, stopping`);
      process.once('SIGINT', () => process.exit(130));
      process.once('SIGTERM', () => process.exit(143));
      resolve();
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
}
