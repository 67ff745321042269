import {
  type InvocationRequest,
  type InvocationResponse,
  type LogLine,
  type Outcome,
  PROTOCOL,
} from '../protocol/index.ts';
import { deepFreeze, type Handler, type HandlerContext, handlerContext } from './context.ts';
import { PermanentError, TemporaryError } from './errors.ts';
import { collectingLogger } from './logger.ts';
import type { Registered } from './registry.ts';

/** Arbitrary errors are retried, as Kopf does by default. */
const ARBITRARY_ERROR_DELAY_SECONDS = 60;

/** Runs the due handlers one after another, in the request's order, as Kopf runs the handlers of one cause. */
export async function invoke(
  request: InvocationRequest,
  handlers: ReadonlyMap<string, Registered>,
): Promise<InvocationResponse> {
  const frozen = deepFreeze(request);
  const logs: LogLine[] = [];
  const outcomes: [string, Outcome][] = [];
  for (const due of frozen.handlers) {
    const { fn } = handlers.get(due.id) as Registered;
    const logger = collectingLogger(logs, due.id);
    outcomes.push([due.id, await attempt(fn, handlerContext(frozen, due, logger))]);
  }
  // fromEntries defines own properties, so an id such as "__proto__" stays an ordinary key.
  return { protocol: PROTOCOL, outcomes: Object.fromEntries(outcomes), logs };
}

async function attempt(fn: Handler, context: HandlerContext): Promise<Outcome> {
  let result: unknown;
  try {
    result = await fn(context);
  } catch (error) {
    return failure(error);
  }
  if (result === undefined || result === null) return { status: 'success' };
  try {
    return { status: 'success', result: asJson(result) };
  } catch (error) {
    return {
      status: 'permanent',
      message: `the result cannot be stored in status: ${(error as Error).message}`,
    };
  }
}

function failure(error: unknown): Outcome {
  if (error instanceof PermanentError) return { status: 'permanent', message: error.message };
  if (error instanceof TemporaryError) {
    return { status: 'temporary', message: error.message, delay: error.delay };
  }
  const message = error instanceof Error ? error.message || error.name : String(error);
  return { status: 'temporary', message, delay: ARBITRARY_ERROR_DELAY_SECONDS };
}

/** JSON.stringify drops functions and symbols silently; a result that would lose parts must fail loudly instead. */
function asJson(value: unknown): unknown {
  const text = JSON.stringify(value, (key, item) => {
    const type = typeof item;
    if (type === 'function' || type === 'symbol' || type === 'bigint') {
      throw new TypeError(`${key ? `"${key}" is` : 'it is'} a ${type}, which JSON cannot hold`);
    }
    return item;
  });
  if (text === undefined) throw new TypeError('it has no JSON form');
  return JSON.parse(text);
}
