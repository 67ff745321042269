/**
 * A consistent-hash ring over the members that share the objects (sharding): each member has many
 * points on the ring (virtual nodes), an object belongs to the member of the first point at or after
 * its key's hash. A member that joins takes a share from each of the others and moves nothing
 * between them; one that leaves gives its share out among the rest. Pure and deterministic: every
 * gateway computes the same owner from the same members.
 */
import { createHash } from 'node:crypto';

/** Points per member: enough for shares within a few percent of even among a handful of members. */
export const VIRTUAL_NODES = 128;

export class Ring {
  /** Points, sorted by position. */
  readonly #positions: Uint32Array;
  readonly #owners: string[];

  constructor(members: readonly string[], virtualNodes = VIRTUAL_NODES) {
    const points = [...new Set(members)].flatMap((member) =>
      Array.from({ length: virtualNodes }, (_, index) => ({ position: hash(`${member}#${index}`), member })),
    );
    points.sort((a, b) => a.position - b.position || (a.member < b.member ? -1 : 1));
    this.#positions = Uint32Array.from(points.map((point) => point.position));
    this.#owners = points.map((point) => point.member);
  }

  /** The member `key` belongs to; undefined on an empty ring. */
  ownerOf(key: string): string | undefined {
    if (this.#owners.length === 0) return undefined;
    const position = hash(key);
    let low = 0;
    let high = this.#positions.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((this.#positions[middle] as number) < position) low = middle + 1;
      else high = middle;
    }
    return this.#owners[low === this.#owners.length ? 0 : low];
  }
}

/** The first 32 bits of SHA-256: spread evenly, and the same in every process. */
function hash(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0);
}
