/**
 * The gateway is composed of parts with a lifetime (controller-runtime's runnables): each starts in
 * the order it was added and stops in the reverse order, so a part stops before what it depends on
 * (a resource's watch before its queue, every resource before the namespace watch they follow).
 *
 * Parts marked `leaderOnly` (the pipelines of watched resources: reactors, timers, daemons) run only
 * while this replica leads: `follow()` stops them, `lead()` starts them again. The others (admission
 * webhooks, health, the function services) run on every replica for as long as the gateway runs.
 */
import type { Logger } from '../logging.ts';

export interface Component {
  /** For logs: what failed to stop. */
  readonly name: string;
  /** Runs only while this replica leads, and may be started again after it was stopped. */
  readonly leaderOnly: boolean;
  start(): void | Promise<void>;
  stop(): Promise<void>;
}

export class Components {
  readonly #parts: Component[] = [];
  readonly #logger: Logger;
  #state: 'new' | 'started' | 'stopped' = 'new';
  #leading: boolean;
  /** Leading and following change one at a time, each once the one before has finished. */
  #turning: Promise<void> = Promise.resolve();

  /** `leading`: whether the leader-only parts run from the start (a replica alone always leads). */
  constructor(logger: Logger, { leading = true }: { leading?: boolean } = {}) {
    this.#logger = logger;
    this.#leading = leading;
  }

  get leading(): boolean {
    return this.#leading;
  }

  /** Adds a part; once the whole has started, a part added later (a resource found later) starts at once. */
  async add(part: Component): Promise<void> {
    if (this.#state === 'stopped') throw new Error(`cannot add ${part.name}: the gateway is stopping`);
    this.#parts.push(part);
    if (this.#state === 'started' && this.#runs(part)) await part.start();
  }

  /** Starts the parts in order; leading and following wait until it is done. */
  start(): Promise<void> {
    return this.#turn(async () => {
      this.#state = 'started';
      for (const part of this.#parts) if (this.#runs(part)) await part.start();
    });
  }

  /** Starts the leader-only parts, in order. Resolves once they have started. */
  lead(): Promise<void> {
    return this.#turn(async () => {
      if (this.#leading) return;
      this.#leading = true;
      if (this.#state !== 'started') return;
      for (const part of this.#parts) if (part.leaderOnly) await part.start();
    });
  }

  /** Stops the leader-only parts, newest first. Resolves once they have stopped: none of their calls is in flight. */
  follow(): Promise<void> {
    return this.#turn(async () => {
      if (!this.#leading) return;
      this.#leading = false;
      if (this.#state !== 'started') return;
      await this.#stopAll(this.#parts.filter((part) => part.leaderOnly));
    });
  }

  /** Stops every part, newest first; one that fails to stop is logged and does not keep the others running. */
  async stop(): Promise<void> {
    const wasStarted = this.#state === 'started';
    this.#state = 'stopped';
    await this.#turning;
    if (wasStarted) await this.#stopAll(this.#parts.filter((part) => this.#runs(part)));
    else await this.#stopAll(this.#parts); // a start that failed half-way: whatever started stops
  }

  #runs(part: Component): boolean {
    return this.#leading || !part.leaderOnly;
  }

  async #stopAll(parts: readonly Component[]): Promise<void> {
    for (const part of [...parts].reverse()) {
      try {
        await part.stop();
      } catch (error) {
        this.#logger.error('stopping a part failed', { part: part.name, err: error });
      }
    }
  }

  #turn(change: () => Promise<void>): Promise<void> {
    const turned = this.#turning.then(change);
    this.#turning = turned.catch((error) => {
      this.#logger.error('changing leadership failed', { err: error });
    });
    return turned;
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
