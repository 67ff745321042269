export type { FunctionEndpoint } from './dispatch/services.ts';
export type { FetchHandler } from './dispatch/transport.ts';
export { type Gateway, type GatewayOptions, startGateway } from './gateway.ts';
export { DEFAULT_IDENTITY, type Identity } from './identity.ts';
export { createLogger, type Logger } from './logging.ts';
export { DEV_PRIORITY } from './peering/members.ts';
export type { PeeringOptions } from './peering/peering.ts';
export { ensureProcessSecret } from './secret.ts';
export { DEFAULT_SETTINGS, type Settings, type SettingsPatch } from './settings.ts';
