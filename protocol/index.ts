export * from './credentials.ts';
export type * from './invocation.ts';
export * from './kinds.ts';
export * from './limits.ts';
export type * from './manifest.ts';
export * from './trust.ts';
export * from './version.ts';
