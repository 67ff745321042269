/** The protocol's name and version: sent in every message, so both sides can refuse what they do not speak. */
export const PROTOCOL = 'causeway.dev/v1';

/** Where a function service answers. Everything but the health check is signed by the gateway. */
export const PATHS = {
  health: '/healthz',
  manifest: '/causeway/v1/manifest',
  invoke: '/causeway/v1/invoke',
} as const;

/**
 * Where an operator made with causeway/functions offers its calls to a gateway in the same process
 * (`causeway run`): without HTTP, JSON or signatures, which guard a network the call never crosses.
 */
export const IN_PROCESS = Symbol.for('causeway.dev/v1/in-process');

/**
 * Where an operator made with causeway/functions takes a ServiceObserver (manifest.ts), told of what
 * it does: whoever serves it (`causeway serve`) counts it in its metrics.
 */
export const OBSERVED = Symbol.for('causeway.dev/v1/observed');
