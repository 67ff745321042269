export type { Handler, HandlerContext } from './context.ts';
export { PermanentError, TemporaryError } from './errors.ts';
export type { Logger } from './logger.ts';
export { type Operator, type OperatorOptions, operator } from './operator.ts';
export type { HandlerOptions } from './registry.ts';
export type { Resource } from './resource.ts';
