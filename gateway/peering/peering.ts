/**
 * Peering, the gateway's elector: it holds this gateway's member Lease, renews it, looks at the
 * others', and tells the manager to hold its leader and shard parts (the pipelines run) or release
 * them (they stop) as the view says; it is also the Role the parts read.
 * A member that is to lead waits until every live member has acknowledged the view, so the one that
 * led before has stopped first; a leader that cannot renew its Lease stops leading at the renew
 * deadline, and refuses writes from then on, before any other member may take its Lease for gone.
 * Every replica serves admission and health whatever its role: those run on every replica.
 */
import { hostname } from 'node:os';
import type { KubernetesObject } from '../../protocol/index.ts';
import type { KubeClient } from '../kube/client.ts';
import { ApiError, isNotFound } from '../kube/errors.ts';
import type { Logger } from '../logging.ts';
import type { Elector, Holder } from '../manager/manager.ts';
import { FencedOut, type Role, type WriteLeave } from '../manager/role.ts';
import { Serial } from '../serial.ts';
import type { Settings } from '../settings.ts';
import { sleep } from '../timing.ts';
import { LEASES, listMembers, writeLease } from './leases.ts';
import {
  acknowledgedByAll,
  Liveness,
  type Member,
  memberKeys,
  notAcknowledging,
  type View,
  viewOf,
} from './members.ts';
import { Ring } from './ring.ts';

export interface PeeringOptions {
  /** Where the members' Leases live: the gateway's namespace. */
  namespace: string;
  /** This gateway among its peers, unique: the pod's name in a pod (POD_NAME), else host and process. */
  id?: string;
  /** The members of the highest priority lead; the others pause. `causeway run --dev`: 666. */
  priority?: number;
  /**
   * Share the objects among every member of the highest priority (all of them must say so), each
   * handling those a consistent-hash ring of the members gives it, instead of one leading alone.
   */
  sharding?: boolean;
}

export interface PeeringEngineOptions extends PeeringOptions {
  client: KubeClient;
  /** The gateway's annotation prefix: its Leases' label and annotations, so identities do not meet. */
  prefix: string;
  settings: Settings['peering'];
  logger: Logger;
}

/**
 * Whether a gateway may write, `renewedAgoMs` after its Lease's last renewal: not unless it holds its
 * pipelines (leading, or finishing the calls in flight as it stops: no other member starts before it
 * says it has stopped), nor from the renew deadline on (its writes must reach the apiserver before
 * another member may take it for gone). Once a renewal is overdue, each write carries the
 * resourceVersion it was computed from, so one that arrives late over a newer state is refused.
 */
export function writeLeave(
  holding: boolean,
  renewedAgoMs: number,
  settings: Settings['peering'],
): WriteLeave {
  if (!holding) throw new FencedOut('this gateway no longer leads: the write is not made');
  if (renewedAgoMs >= settings.renewDeadlineS * 1000) {
    throw new FencedOut(
      `this gateway has not renewed its Lease for ${settings.renewDeadlineS}s and may no longer lead: the write is not made`,
    );
  }
  return renewedAgoMs >= 2 * settings.retryPeriodS * 1000 ? 'guarded' : 'free';
}

export class Peering implements Elector, Role {
  readonly name = 'peering';
  readonly id: string;
  readonly #options: PeeringEngineOptions;
  readonly #keys: ReturnType<typeof memberKeys>;
  readonly #lease: string;
  readonly #since = new Date().toISOString();
  readonly #liveness = new Liveness();
  readonly #stopping = new AbortController();
  /** What it makes hold and release the leader and shard parts: the manager, once started. */
  #holder: Holder | undefined;
  /** The view this gateway acknowledges in its Lease: it holds nothing that view does not give it. */
  #acknowledged = '';
  #renewedAt = 0;
  #resourceVersion: string | undefined;
  /** Leading and following, one at a time: nothing is acknowledged while one is under way. */
  readonly #turns = new Serial();
  #ticking: Promise<void> | undefined;
  /** Writes of its Lease, one at a time. */
  readonly #writes = new Serial();
  /** Whether any pipeline of this gateway may be running: from leading until following is done. */
  #holding = false;
  /** The view its pipelines run under: sharding, another view gives it another share. */
  #heldView = '';
  /** Sharding: who handles which object under the view held. */
  #ring: Ring | undefined;
  /** The view as last seen. */
  #view: View | undefined;
  /** What was last said in the log about the view, so each change is said once. */
  #said = '';

  constructor(options: PeeringEngineOptions) {
    this.#options = options;
    this.#keys = memberKeys(options.prefix);
    this.id = options.id ?? defaultMemberId();
    this.#lease = memberLeaseName(options.prefix, this.id);
  }

  get role(): Role {
    return this;
  }

  /** How this gateway may write now: see `writeLeave`. */
  fence(): WriteLeave {
    return writeLeave(this.#holding, Date.now() - this.#renewedAt, this.#options.settings);
  }

  async start(holder: Holder): Promise<void> {
    this.#holder = holder;
    const started = Date.now();
    await this.#renew(AbortSignal.timeout(this.#options.settings.renewDeadlineS * 1000));
    this.#renewedAt = started;
    this.#options.logger.info(
      `peering as "${this.id}" (priority ${this.#priority}) through Leases in namespace ${this.#options.namespace}`,
    );
    this.#ticking = this.#tickForever();
  }

  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.#ticking;
    await this.#turns.idle();
    // An acknowledgement is written at once, unawaited: removed after it lands, not before, where it
    // would fail the removal's precondition, or write the Lease anew, and the others wait out its term.
    await this.#writes.idle();
    // By now the pipelines have stopped (they stop before this part): the others need not wait.
    try {
      await this.#removeLease();
    } catch (error) {
      if (!isNotFound(error)) {
        this.#options.logger.warning(
          `could not remove this gateway's Lease ${this.#lease}: the others take over once it expires`,
          { err: describe(error) },
        );
      }
    }
  }

  /**
   * Deletes this gateway's Lease as last written, not one a later process of the same id (a pod
   * started again) wrote since. A renewal given up on (its time ran out) may have landed all the same,
   * unknown here: its Lease is still this process's (the same `since`), and goes as it now is.
   */
  async #removeLease(): Promise<void> {
    const { client, namespace } = this.#options;
    const path = `${LEASES(namespace)}/${this.#lease}`;
    const remove = (resourceVersion: string | undefined) =>
      client.request(path, {
        method: 'DELETE',
        ...(resourceVersion ? { body: { preconditions: { resourceVersion } } } : {}),
      });
    try {
      await remove(this.#resourceVersion);
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 409)) throw error;
      const current = await client.get<KubernetesObject>(path);
      if (current.metadata.annotations?.[this.#keys.since] !== this.#since) throw error;
      await remove(current.metadata.resourceVersion);
    }
  }

  get #priority(): number {
    return this.#options.priority ?? 0;
  }

  async #tickForever(): Promise<void> {
    const { settings, logger } = this.#options;
    while (!this.#stopping.signal.aborted) {
      try {
        await this.#tick();
      } catch (error) {
        logger.warning('peering failed, trying again', { err: describe(error) });
      }
      await sleep(settings.retryPeriodS * 1000, this.#stopping.signal);
    }
  }

  async #tick(): Promise<void> {
    const { settings, logger } = this.#options;
    const started = Date.now();
    try {
      await this.#renew(
        AbortSignal.any([this.#stopping.signal, AbortSignal.timeout(settings.retryPeriodS * 1000)]),
      );
      this.#renewedAt = started;
    } catch (error) {
      if (this.#stopping.signal.aborted) return;
      const since = Math.round((Date.now() - this.#renewedAt) / 1000);
      logger.warning(`could not renew this gateway's Lease ${this.#lease} (for ${since}s)`, {
        err: describe(error),
      });
      const overdue = Date.now() - this.#renewedAt >= settings.renewDeadlineS * 1000;
      if (this.#holding && !this.#turns.busy && overdue) {
        logger.error(`stops leading: its Lease was not renewed within ${settings.renewDeadlineS}s`);
        this.#follow();
      }
      return;
    }
    const members = await this.#members();
    const alive = this.#liveness.alive(members, Date.now());
    const view = viewOf(alive);
    this.#view = view;
    this.#act(view);
    // The leader clears away the Leases of members gone (pods replaced, laptops closed), and freezes over.
    if (view.leader?.id === this.id) await this.#collect(members.filter((member) => !alive.includes(member)));
  }

  /**
   * Whether this gateway is the view's leader (sharding: the oldest active member): the one replica
   * that posts what every replica would otherwise post once each.
   */
  get leads(): boolean {
    return this.#view?.leader?.id === this.id;
  }

  /** Whether another gateway of this identity runs now: the last one to stop takes its webhooks away. */
  async othersRunning(): Promise<boolean> {
    const alive = this.#liveness.alive(await this.#members(), Date.now());
    return alive.some((member) => !member.freeze && member.id !== this.id);
  }

  async #collect(gone: readonly Member[]): Promise<void> {
    const { client, namespace, logger } = this.#options;
    for (const member of gone) {
      try {
        await client.request(`${LEASES(namespace)}/${member.lease}`, {
          method: 'DELETE',
          // Not if it was renewed meanwhile: then it is not gone.
          body: { preconditions: { resourceVersion: member.resourceVersion } },
        });
        logger.info(`removed the Lease of "${member.id}", gone for ${member.durationSeconds}s or more`);
      } catch (error) {
        if (!isNotFound(error) && !(error instanceof ApiError && error.status === 409)) throw error;
      }
    }
  }

  /** Leads, follows or acknowledges, as `view` has it. */
  #act(view: View): void {
    const { logger } = this.#options;
    if (this.#turns.busy) return; // acted on once done, at the next look
    const runs = this.#runsUnder(view);
    this.#say(view, runs);
    // Sharding, any other view gives it another share: what it holds goes first.
    const keeps = runs && (!this.#options.sharding || this.#heldView === view.digest);
    if (this.#holding && !keeps) {
      this.#follow();
      return;
    }
    this.#acknowledge(view.digest); // what it holds (everything or nothing), this view gives it
    if (this.#holding || !runs) return;
    // Its own acknowledgement is written now: the Leases it listed may not show it yet.
    const others = { ...view, members: view.members.filter((member) => member.id !== this.id) };
    if (acknowledgedByAll(others)) this.#lead(view);
    else {
      const waiting = notAcknowledging(others).map((member) => member.id);
      logger.debug(`to run once ${waiting.join(', ')} acknowledge the view`);
    }
  }

  /**
   * Whether this gateway handles objects under `view` (sharding, a share of them; else all of them,
   * as the leader). An object it does not own is still indexed: every replica's indexes are whole.
   */
  owns(uid: string): boolean {
    return !this.#options.sharding || this.#ring?.ownerOf(uid) === this.id;
  }

  #runsUnder(view: View): boolean {
    if (view.mixed) return false;
    if (this.#options.sharding) return view.active.some((member) => member.id === this.id);
    return view.leader?.id === this.id;
  }

  #lead(view: View): void {
    this.#holding = true; // from the first part started
    this.#heldView = view.digest;
    if (this.#options.sharding) this.#ring = new Ring(view.active.map((member) => member.id));
    this.#turn(async () => {
      await this.#holder?.hold();
    });
  }

  /** Stops the pipelines; once none of their calls is in flight, says so in the Lease at once. */
  #follow(): void {
    this.#turn(async () => {
      await this.#holder?.release();
      this.#holding = false;
      this.#heldView = '';
      this.#ring = undefined;
      await this.#renew(AbortSignal.timeout(this.#options.settings.retryPeriodS * 1000)).catch(() => {});
    });
  }

  /** Runs a change of what this gateway holds once the one under way (if any) is done. */
  #turn(change: () => Promise<void>): void {
    this.#turns
      .run(change)
      .catch((error) => this.#options.logger.error('peering failed', { err: describe(error) }));
  }

  #acknowledge(digest: string): void {
    if (digest === this.#acknowledged) return;
    this.#acknowledged = digest;
    // Written at once, not at the next renewal: the member to lead is waiting for it.
    const started = Date.now();
    void this.#renew(AbortSignal.timeout(this.#options.settings.retryPeriodS * 1000)).then(
      () => {
        this.#renewedAt = Math.max(this.#renewedAt, started);
      },
      () => {}, // written with the next renewal
    );
  }

  #say(view: View, runs: boolean): void {
    const said = `${view.digest}/${runs}`;
    if (said === this.#said) return;
    this.#said = said;
    const { logger } = this.#options;
    const peers = view.members.filter((member) => !member.freeze).length;
    const top = view.active[0]?.priority;
    if (view.frozen) {
      logger.info(
        `paused: peering is frozen by ${view.frozen.id}: ${view.frozen.freeze?.message || '(no message)'}`,
      );
    } else if (view.mixed) {
      const sharding = view.active.filter((member) => member.sharding).map((member) => member.id);
      logger.error(
        `paused: of the gateways of this identity, ${sharding.join(', ')} shard and the others do not: run them all with --sharding, or none`,
      );
    } else if (top !== undefined && top > this.#priority) {
      logger.info(
        `paused by a higher priority (${top}): ${view.active.map((member) => `"${member.id}"`).join(', ')} run`,
      );
    } else if (this.#options.sharding) {
      logger.info(
        `shares the objects with the ${view.active.length} gateway(s) of priority ${this.#priority}: a ${view.active.length === 1 ? 'whole' : `1/${view.active.length}`} share, by a consistent-hash ring of their ids`,
      );
    } else if (runs) {
      logger.info(`leads the ${peers} gateway(s) of its identity (priority ${this.#priority})`);
    } else if (view.leader) {
      logger.info(`follows "${view.leader.id}" (priority ${view.leader.priority})`);
    }
  }

  /** Creates or renews this gateway's Lease, with what it acknowledges; one write at a time. */
  #renew(signal: AbortSignal): Promise<void> {
    return this.#writes.run(() => this.#writeLease(signal));
  }

  async #writeLease(signal: AbortSignal): Promise<void> {
    const { client, namespace } = this.#options;
    try {
      // Over ours as last written, or, when it changed or went (a restart of this pod, a member that
      // took it for gone), over what is there.
      this.#resourceVersion = await writeLease(
        client,
        namespace,
        this.#leaseBody(),
        this.#resourceVersion,
        signal,
      );
    } catch (error) {
      if (error instanceof ApiError && error.status === 403) throw new Error(forbidden(namespace));
      throw error;
    }
  }

  #leaseBody() {
    const now = new Date().toISOString().replace('Z', '000Z'); // a MicroTime
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: this.#lease,
        labels: { [this.#keys.peering]: 'member' },
        annotations: {
          [this.#keys.priority]: String(this.#priority),
          [this.#keys.since]: this.#since,
          [this.#keys.acknowledged]: this.#acknowledged,
          [this.#keys.leading]: String(this.#holding),
          [this.#keys.sharding]: String(this.#options.sharding === true),
        },
      },
      spec: {
        holderIdentity: this.id,
        leaseDurationSeconds: this.#options.settings.leaseDurationS,
        acquireTime: this.#since.replace('Z', '000Z'),
        renewTime: now,
      },
    };
  }

  #members(): Promise<Member[]> {
    return listMembers(this.#options.client, this.#options.namespace, this.#options.prefix);
  }
}

/** This process among its peers: the pod's name in a pod; else the host's, with the process id. */
export function defaultMemberId(): string {
  const id = process.env.POD_NAME ?? `${hostname()}-${process.pid}`;
  return (
    id
      .toLowerCase()
      .replace(/[^a-z0-9.-]+/g, '-')
      .replace(/^[-.]+|[-.]+$/g, '')
      .slice(0, 200) || `gateway-${process.pid}`
  );
}

/** A member's Lease: under the identity's prefix, so two identities' members never share one. */
export function memberLeaseName(prefix: string, id: string): string {
  return `${prefix}.${id}`.slice(0, 253).replace(/[-.]+$/, '');
}

/** The Lease a freeze is held by (`causeway freeze`). */
export function freezeLeaseName(prefix: string): string {
  return `${prefix}.freeze`;
}

function forbidden(namespace: string): string {
  return (
    `peering needs to get, list, create, update and delete Leases (coordination.k8s.io) in namespace ${namespace}: ` +
    'grant them to the gateway, or run it alone with --standalone'
  );
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
