/**
 * The oldest Node the CLI runs on: undici 8 (under client-node) needs 22.19, and TypeScript operator
 * modules need Node's type stripping, on by default since 22.18.
 */
export const MINIMUM_NODE = '22.19.0';

/** Why this Node cannot run the CLI, in one line; undefined when it can. */
export function nodeVersionProblem(version: string): string | undefined {
  const have = version.split('.').map(Number);
  const need = MINIMUM_NODE.split('.').map(Number);
  for (let i = 0; i < need.length; i++) {
    const difference = (have[i] ?? 0) - (need[i] ?? 0);
    if (difference > 0) return undefined;
    if (difference < 0 || Number.isNaN(difference)) {
      return `needs Node.js ${MINIMUM_NODE} or later, and this is ${version}: install a newer Node (https://nodejs.org)`;
    }
  }
  return undefined;
}
