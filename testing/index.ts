export { type ActivityCall, callActivities, callHandlers, type HandlerCall } from './handlers.ts';
export { type RunningOperator, type RunOptions, runOperator } from './runner.ts';
