/** The protocol's name and version: sent in every message, so both sides can refuse what they do not speak. */
export const PROTOCOL = 'causeway.dev/v1';

/** Where a function service answers. Everything but the health check is signed by the gateway. */
export const PATHS = {
  health: '/healthz',
  manifest: '/causeway/v1/manifest',
  invoke: '/causeway/v1/invoke',
} as const;
