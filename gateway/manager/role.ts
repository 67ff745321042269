/**
 * What this replica is among the gateways of its identity, the one object every part is given: the
 * elector's view (peering), or, for a gateway alone, ALONE. "Leads" has one meaning: this replica is
 * the one that posts what every replica would otherwise post once each (alone, it is; with sharding,
 * the oldest member). Which objects it handles is `owns`, and whether it may write now is `fence`.
 */

/** How a write may go: as it is, or guarded by the resourceVersion it was computed from. */
export type WriteLeave = 'free' | 'guarded';

/** A write refused because this replica may no longer handle objects: another may have taken over. */
export class FencedOut extends Error {}

export interface Role {
  /** Whether this replica is the leader of its identity now. */
  readonly leads: boolean;
  /** Whether this replica handles the object of this uid (sharding: its share; else all, while it holds them). */
  owns(uid: string): boolean;
  /** How this replica may write now; throws FencedOut when it may not. */
  fence(): WriteLeave;
  /** Whether another gateway of this identity runs now: the last one to stop takes its webhooks away. */
  othersRunning(): Promise<boolean>;
}

/** A gateway with no peers: it leads, handles every object, and may always write. */
export const ALONE: Role = {
  leads: true,
  owns: () => true,
  fence: () => 'free',
  othersRunning: async () => false,
};
