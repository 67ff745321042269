/**
 * Peering's model, pure: the gateways of one identity each hold a Lease (a member), renewed while they
 * run. From the members it sees alive, each computes the same view: who may lead (the highest
 * priority only; nobody while a freeze is held) and who leads (the one leading now, else the oldest). A member that
 * is to lead starts only once every live member has acknowledged that view, which each does once it
 * has stopped whatever the view takes from it: so no two gateways lead at once, without any lock
 * beyond the apiserver's own writes.
 */
import { createHash } from 'node:crypto';
import type { KubernetesObject } from '../../protocol/index.ts';
import { isObject } from '../../protocol/json.ts';
import { Ring } from './ring.ts';

/** Kopf's priority of a development operator (`kopf run --dev`), and `causeway run --dev`'s. */
export const DEV_PRIORITY = 666;
/** Members beyond this many are not looked at: a namespace flooded with Leases does not flood us. */
export const MAX_MEMBERS = 256;
const MAX_PRIORITY = 1_000_000;

export interface Member {
  /** Who holds it: a pod's name, or host and process. */
  id: string;
  /** The Lease's name, and its version: a change of version is a renewal. */
  lease: string;
  resourceVersion: string;
  priority: number;
  /** When it joined, by its own clock: the oldest may lead. */
  since: string;
  durationSeconds: number;
  /** The digest of the view it acknowledges: it holds nothing that view does not give it. */
  acknowledged: string;
  /** Whether it may be running pipelines, by its own word. */
  leading: boolean;
  /** Whether it shares the objects with the other active members (`--sharding`) rather than leading alone. */
  sharding: boolean;
  /** Its last renewal by its own clock, for a tool that cannot watch it renewed (`causeway freeze`). */
  renewedAt?: number;
  /** A freeze (`causeway freeze`): a member that never leads, above every priority, and why. */
  freeze?: { message: string; until: number | undefined };
}

/** What the members see of each other, and when this gateway last saw each renewed. */
export interface View {
  members: readonly Member[];
  /** The digest every member acknowledges once it has acted on this view. */
  digest: string;
  /** The members of the highest priority, who run (all of them sharding, or their leader): none while frozen. */
  active: readonly Member[];
  /** The active member that runs, when they do not shard: the one leading now, else the oldest. */
  leader: Member | undefined;
  frozen: Member | undefined;
  /** Some active members shard and others do not: none runs until they agree (a misconfiguration). */
  mixed: boolean;
}

/** Annotations and label of a member's Lease, under the gateway's annotation prefix. */
export function memberKeys(prefix: string) {
  return {
    peering: `${prefix}/peering`,
    priority: `${prefix}/priority`,
    since: `${prefix}/since`,
    acknowledged: `${prefix}/acknowledged`,
    /** "true" from when a member starts leading until it has stopped again: what `causeway freeze` waits for. */
    leading: `${prefix}/leading`,
    sharding: `${prefix}/sharding`,
    freeze: `${prefix}/freeze`,
  };
}

/** A member from its Lease, whoever wrote it; undefined if it is not one (a hostile or foreign Lease). */
export function memberOf(lease: KubernetesObject, prefix: string): Member | undefined {
  const keys = memberKeys(prefix);
  const annotations: Record<string, unknown> = isObject(lease.metadata.annotations)
    ? lease.metadata.annotations
    : {};
  const spec = isObject(lease.spec) ? lease.spec : {};
  const id = spec.holderIdentity;
  const durationSeconds = spec.leaseDurationSeconds;
  const givenPriority = annotations[keys.priority] ?? '0';
  const priority = typeof givenPriority === 'string' ? Number(givenPriority) : Number.NaN;
  const since = annotations[keys.since];
  if (typeof id !== 'string' || id.length === 0 || id.length > 253) return undefined;
  if (typeof durationSeconds !== 'number' || !Number.isInteger(durationSeconds) || durationSeconds < 1)
    return undefined;
  if (!Number.isInteger(priority) || Math.abs(priority) > MAX_PRIORITY) return undefined;
  if (typeof since !== 'string' || Number.isNaN(Date.parse(since))) return undefined;
  const member: Member = {
    id,
    lease: lease.metadata.name,
    resourceVersion: lease.metadata.resourceVersion ?? '',
    priority,
    since,
    durationSeconds,
    acknowledged: textOf(annotations[keys.acknowledged]),
    leading: annotations[keys.leading] === 'true',
    sharding: annotations[keys.sharding] === 'true',
  };
  const renewed = typeof spec.renewTime === 'string' ? Date.parse(spec.renewTime) : Number.NaN;
  if (!Number.isNaN(renewed)) member.renewedAt = renewed;
  const freeze = annotations[keys.freeze];
  if (typeof freeze === 'string') {
    // A freeze is not renewed: it lasts its lifetime from when it was written, by the wall clock.
    member.freeze = {
      message: freeze.slice(0, 1024),
      until: Number.isNaN(renewed) ? undefined : renewed + durationSeconds * 1000,
    };
  }
  return member;
}

/**
 * Follows the members' renewals by this gateway's clock, as client-go's leader election does (another
 * node's clock may be off): a member is alive until its Lease has not changed for its duration since
 * this gateway first saw it as it is. A freeze lasts until its wall-clock end.
 */
export class Liveness {
  readonly #seen = new Map<string, { resourceVersion: string; at: number }>();

  /** The members alive at `now`, from the Leases listed then. */
  alive(members: readonly Member[], now: number): Member[] {
    const listed = new Set(members.map((member) => member.lease));
    for (const lease of this.#seen.keys()) if (!listed.has(lease)) this.#seen.delete(lease);
    return members.filter((member) => {
      if (member.freeze) return member.freeze.until === undefined || now < member.freeze.until;
      const seen = this.#seen.get(member.lease);
      if (!seen || seen.resourceVersion !== member.resourceVersion) {
        this.#seen.set(member.lease, { resourceVersion: member.resourceVersion, at: now });
        return true;
      }
      return now - seen.at < member.durationSeconds * 1000;
    });
  }
}

/** How late another machine's clock may be, when this one judges its renewals. */
const CLOCK_SKEW_MS = 5000;

/**
 * Whether a member is alive at `now` by the wall clock, for a tool that does not watch long enough to
 * see renewals itself (`causeway freeze`, `causeway explain`): renewed within its duration, or a
 * freeze within its lifetime.
 */
export function aliveByWallClock(member: Member, now: number): boolean {
  if (member.freeze) return member.freeze.until === undefined || now < member.freeze.until;
  return (
    member.renewedAt !== undefined && now < member.renewedAt + member.durationSeconds * 1000 + CLOCK_SKEW_MS
  );
}

/** The view of these live members: the same members give the same view on every gateway. */
export function viewOf(alive: readonly Member[]): View {
  const members = [...alive].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, MAX_MEMBERS);
  const frozen = members.find((member) => member.freeze);
  const gateways = members.filter((member) => !member.freeze);
  const top = Math.max(...gateways.map((member) => member.priority));
  const active = frozen ? [] : gateways.filter((member) => member.priority === top);
  // The one leading goes on leading (one that comes back after a cut does not take over again); else the oldest.
  const oldest = (of: Member[]) =>
    of.sort((a, b) => Date.parse(a.since) - Date.parse(b.since) || (a.id < b.id ? -1 : 1))[0];
  const leader = oldest(active.filter((member) => member.leading)) ?? oldest([...active]);
  const mixed = active.some((member) => member.sharding) && active.some((member) => !member.sharding);
  const described = members.map(
    (member) => `${member.id}\0${member.priority}\0${member.freeze ? 'F' : ''}${member.sharding ? 'S' : ''}`,
  );
  const digest = createHash('sha256').update(described.join('\n')).digest('hex').slice(0, 16);
  return { members, digest, active, leader, frozen, mixed };
}

/**
 * The member that handles the object of `uid` in `view`: with sharding, its member on the ring of the
 * active members (as each sharding gateway computes it); else the leader. None while frozen, or while
 * the active members disagree on sharding (none of them runs then).
 */
export function ownerOf(view: View, uid: string): Member | undefined {
  if (view.mixed || view.active.length === 0) return undefined;
  if (!view.active.every((member) => member.sharding)) return view.leader;
  const id = new Ring(view.active.map((member) => member.id)).ownerOf(uid);
  return view.active.find((member) => member.id === id);
}

/** Whether every live member acknowledges `view` (a freeze needs not: it holds nothing). */
export function acknowledgedByAll(view: View): boolean {
  return view.members.every((member) => member.freeze || member.acknowledged === view.digest);
}

/** The members that have not acknowledged `view` yet, for logs. */
export function notAcknowledging(view: View): Member[] {
  return view.members.filter((member) => !member.freeze && member.acknowledged !== view.digest);
}

function textOf(value: unknown): string {
  return typeof value === 'string' ? value : '';
}
