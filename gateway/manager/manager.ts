/**
 * The manager runs the gateway's parts (controller-runtime's runnables) and owns where each runs.
 *
 * A part declares its placement: on every replica, on the leader, or on a shard (the replicas that
 * handle objects: the leader alone, or with sharding each member its share). The manager starts the
 * parts by stage, in the order of STAGES, and in the order they were added within a stage; it stops
 * them in the reverse, so a part stops before what it uses. A part added once the gateway runs starts
 * at once (a resource found later) if its placement runs here now.
 *
 * Where the gateway has peers, the elector (peering) decides when this replica holds the leader and
 * shard parts: the manager owns it, starts it in its stage, and is told by it to hold or release them.
 * Alone, this replica holds them from the start. Every part gets the one `Role` that says what this
 * replica is, when it starts.
 */
import type { Logger } from '../logging.ts';
import { Serial } from '../serial.ts';
import { ALONE, type Role } from './role.ts';

/** Where a part runs. */
export type Placement = 'every replica' | 'leader' | 'shard';

/**
 * The order the parts start in, each stage once those before it have started; they stop in the reverse.
 * What a stage uses is in a stage before it: the services' calls are signed (trust) and observed
 * (observability); the resources' pipelines stop before the election's Lease goes, and before the
 * namespace watch they follow; the binding that makes pipelines stops before them.
 */
export const STAGES = [
  'observability', // the metrics endpoint, the event loop's sampler
  'trust', // the signing keys, the function services' certificates
  'services', // the function services' connections
  'health', // the liveness and readiness endpoint: stopped last of what serves, it says it stops
  'cleanup', // the operator's cleanup handlers, called at the stop
  'election', // peering: which replica leads, or which share each handles
  'namespaces', // the watch of the namespaces served, which the pipelines follow
  'admission', // the admission webhooks
  'resources', // one pipeline per watched resource
  'binding', // the handlers bound to what serves them, found as resources appear
  'fleet', // FunctionService objects and dev sessions, which change the services served
] as const;

export type Stage = (typeof STAGES)[number];

export interface Part {
  /** For logs: what failed to stop. */
  readonly name: string;
  readonly placement: Placement;
  /** A leader or shard part may be started again after it was stopped, as leadership comes and goes. */
  start(role: Role): void | Promise<void>;
  stop(): Promise<void>;
}

/** What decides which replica holds the leader and shard parts: peering. */
export interface Elector {
  readonly name: string;
  /** What this replica is, as the elector sees it now. */
  readonly role: Role;
  /** Starts electing: `holder.hold()` and `holder.release()` as this replica leads and follows. */
  start(holder: Holder): Promise<void>;
  stop(): Promise<void>;
}

/** What an elector drives. Each resolves once the parts have started, or stopped with no call in flight. */
export interface Holder {
  hold(): Promise<void>;
  release(): Promise<void>;
}

interface Entry {
  stage: Stage;
  part: Part;
}

export class Manager implements Holder {
  readonly #logger: Logger;
  /** By stage, then in the order added. */
  readonly #entries: Entry[] = [];
  #elector: Elector | undefined;
  #state: 'new' | 'started' | 'stopped' = 'new';
  #stopped: Promise<void> | undefined;
  #holding = true;
  /** Whether the leader parts run while holding: fixed as it takes hold, as the share is. */
  #leads = true;
  /** Holding and releasing happen one at a time, each once the one before has finished. */
  readonly #turns = new Serial();

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** What this replica is: alone, it leads and handles every object. */
  get role(): Role {
    return this.#elector?.role ?? ALONE;
  }

  /** Whether this replica handles objects now (its shard parts run): alone, always; with peers, as the elector says. */
  get handling(): boolean {
    return this.#holding;
  }

  /** Lets `elector` decide when this replica holds the leader and shard parts; it runs in the election stage. */
  async elect(elector: Elector): Promise<void> {
    if (this.#elector) throw new Error(`an elector is already set: ${this.#elector.name}`);
    this.#elector = elector;
    this.#holding = false;
    await this.add('election', {
      name: elector.name,
      placement: 'every replica',
      start: () => elector.start(this),
      stop: () => elector.stop(),
    });
  }

  /** Adds a part to its stage; once the whole has started, it starts at once where its placement runs now. */
  async add(stage: Stage, part: Part): Promise<void> {
    if (this.#state === 'stopped') throw new Error(`cannot add ${part.name}: the gateway is stopping`);
    const rank = STAGES.indexOf(stage);
    const at = this.#entries.findIndex((entry) => STAGES.indexOf(entry.stage) > rank);
    this.#entries.splice(at === -1 ? this.#entries.length : at, 0, { stage, part });
    if (this.#state === 'started' && this.#runs(part)) await part.start(this.role);
  }

  /** Starts the parts by stage; holding and releasing wait until it is done. */
  start(): Promise<void> {
    return this.#turn(async () => {
      this.#state = 'started';
      if (this.#holding) this.#leads = this.role.leads;
      for (const { part } of this.#entries) if (this.#runs(part)) await part.start(this.role);
    });
  }

  /** Starts the leader and shard parts, in order. Resolves once they have started. */
  hold(): Promise<void> {
    return this.#turn(async () => {
      if (this.#holding) return;
      this.#holding = true;
      this.#leads = this.role.leads;
      if (this.#state !== 'started') return;
      for (const { part } of this.#entries) {
        if (part.placement !== 'every replica' && this.#runs(part)) await part.start(this.role);
      }
    });
  }

  /** Stops the leader and shard parts, newest first. Resolves once they have stopped: none of their calls is in flight. */
  release(): Promise<void> {
    return this.#turn(async () => {
      if (!this.#holding) return;
      const held = this.#entries.filter(({ part }) => part.placement !== 'every replica' && this.#runs(part));
      this.#holding = false;
      if (this.#state !== 'started') return;
      await this.#stopAll(held);
    });
  }

  /**
   * Stops every part, newest first; one that fails to stop is logged and does not keep the others
   * running. Asked again, resolves when the first stop is done.
   */
  stop(): Promise<void> {
    this.#stopped ??= this.#stop();
    return this.#stopped;
  }

  async #stop(): Promise<void> {
    const wasStarted = this.#state === 'started';
    this.#state = 'stopped';
    await this.#turns.idle();
    if (wasStarted) await this.#stopAll(this.#entries.filter(({ part }) => this.#runs(part)));
    else await this.#stopAll(this.#entries); // a start that failed half-way: whatever started stops
  }

  /** Runs a change of what runs once the one before is done; its failure is its caller's, and logged. */
  #turn(change: () => Promise<void>): Promise<void> {
    const turned = this.#turns.run(change);
    turned.catch((error) => this.#logger.error('changing leadership failed', { err: error }));
    return turned;
  }

  #runs(part: Part): boolean {
    switch (part.placement) {
      case 'every replica':
        return true;
      case 'shard':
        return this.#holding;
      case 'leader':
        return this.#holding && this.#leads;
    }
  }

  async #stopAll(entries: readonly Entry[]): Promise<void> {
    for (const { part } of [...entries].reverse()) {
      try {
        await part.stop();
      } catch (error) {
        this.#logger.error('stopping a part failed', { part: part.name, err: error });
      }
    }
  }
}

/** A part from a pair of functions. */
export function part(
  name: string,
  placement: Placement,
  steps: { start?: (role: Role) => void | Promise<void>; stop: () => Promise<void> },
): Part {
  return { name, placement, start: steps.start ?? (() => {}), stop: steps.stop };
}
