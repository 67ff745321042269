export type { Handler, HandlerContext, MergePatch, Patch } from './context.ts';
export { AdmissionError, PermanentError, TemporaryError } from './errors.ts';
export { ABSENT, PRESENT } from './filters.ts';
export { adjustNamespace, adopt, appendOwnerReference, harmonizeNaming, label } from './hierarchies.ts';
export type { Logger } from './logger.ts';
export { type Operator, type OperatorOptions, operator } from './operator.ts';
export type { HandlerOptions } from './registry.ts';
export { requeue } from './requeue.ts';
export type { Resource } from './resource.ts';
