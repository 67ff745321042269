export type * from './invocation.ts';
export type * from './manifest.ts';
export * from './trust.ts';
export * from './version.ts';
