/**
 * The gateway is composed of parts with a lifetime (controller-runtime's runnables): each starts in
 * the order it was added and stops in the reverse order, so a part stops before what it depends on
 * (a resource's watch before its queue, every resource before the namespace watch they follow).
 */
import type { Logger } from './logging.ts';

export interface Component {
  /** For logs: what failed to stop. */
  readonly name: string;
  /**
   * Runs on the replica that leads only (reactors, timers), unlike webhooks and health endpoints,
   * which every replica serves. Until peering elects a leader, every replica leads.
   */
  readonly leaderOnly: boolean;
  start(): void | Promise<void>;
  stop(): Promise<void>;
}

export class Components {
  readonly #parts: Component[] = [];
  readonly #logger: Logger;
  #state: 'new' | 'started' | 'stopped' = 'new';

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** Adds a part; once the whole has started, a part added later (a resource found later) starts at once. */
  async add(part: Component): Promise<void> {
    if (this.#state === 'stopped') throw new Error(`cannot add ${part.name}: the gateway is stopping`);
    this.#parts.push(part);
    if (this.#state === 'started') await part.start();
  }

  async start(): Promise<void> {
    this.#state = 'started';
    for (const part of this.#parts) await part.start();
  }

  /** Stops every part, newest first; one that fails to stop is logged and does not keep the others running. */
  async stop(): Promise<void> {
    this.#state = 'stopped';
    for (const part of [...this.#parts].reverse()) {
      try {
        await part.stop();
      } catch (error) {
        this.#logger.error(`stopping ${part.name} failed: ${error instanceof Error ? error.message : error}`);
      }
    }
  }
}

/** A part from a pair of functions. */
export function component(
  name: string,
  leaderOnly: boolean,
  parts: { start?: () => void | Promise<void>; stop: () => Promise<void> },
): Component {
  return { name, leaderOnly, start: parts.start ?? (() => {}), stop: parts.stop };
}
