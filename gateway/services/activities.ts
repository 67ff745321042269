/**
 * The operator's activities as the gateway runs them (Kopf's on.startup, on.cleanup, on.probe and
 * on.login): every service's handlers of one activity, in one call per service, retried as their
 * options say, with the service's operator memo, which the gateway keeps between the calls.
 */
import {
  type ActivityKind,
  type ActivitySpec,
  type Credentials,
  credentialsProblem,
  type DueActivity,
  type Outcome,
} from '../../protocol/index.ts';
import { callActivity, type RetryDelays } from '../dispatch/calls.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import { updatedMemo } from '../dispatch/memo.ts';
import { aborted } from '../dispatch/transport.ts';
import type { Logger } from '../logging.ts';
import { exhaustion } from '../reactor/plan.ts';
import { sleep } from '../timing.ts';

/** A startup or login handler failed for good: the gateway cannot start. */
export class ActivityFailed extends Error {
  override name = 'ActivityFailed';
}

/** One handler's attempts so far. */
export interface Attempt {
  spec: ActivitySpec;
  retry: number;
  /** Milliseconds since the epoch of the first attempt. */
  started: number;
}

/** After an outcome: done with its result, failed for good (why), or to try again at `at`. */
export type Step =
  | { done: true; result: unknown }
  | { failed: string }
  | { retryAt: number; message: string; delaySeconds: number };

/**
 * What an attempt's outcome leads to: a temporary failure is retried after its delay unless the
 * handler's retries or its timeout (from its first attempt) would be exceeded by then. Pure.
 */
export function nextStep(attempt: Attempt, outcome: Outcome, now: number): Step {
  switch (outcome.status) {
    case 'success':
    case 'skipped':
      return { done: true, result: outcome.status === 'success' ? outcome.result : undefined };
    case 'permanent':
    case 'denied':
      return { failed: `failed permanently: ${outcome.message}` };
    case 'temporary': {
      const retryAt = now + outcome.delay * 1000;
      const record = { started: new Date(attempt.started).toISOString(), retries: attempt.retry + 1 };
      const exhausted = exhaustion(attempt.spec, record, new Date(retryAt));
      if (exhausted) return { failed: `${exhausted}: ${outcome.message}` };
      return { retryAt, message: outcome.message, delaySeconds: outcome.delay };
    }
  }
}

/** How a service's handlers of one activity went. */
export interface Settled {
  /** Results by handler id, of those that succeeded. */
  results: Map<string, unknown>;
  /** Why each handler that failed for good did, naming it and its service. */
  failures: string[];
  /** Handlers still to be retried when the run was stopped. */
  unfinished: string[];
}

/** What a service's probes answered: results by probe id, and why those that did not answer failed. */
export interface ProbeRound {
  service: string;
  results: Record<string, unknown>;
  failures: string[];
  /** An operator in the gateway's process: one trust domain with it, its results shown as they are. */
  inProcess?: true;
}

export interface ActivitiesOptions {
  /** The services served now. */
  services: () => readonly FunctionService[];
  /** Seconds before calling a service again after it could not be asked, by retry. */
  retryDelaysS: RetryDelays;
  logger: Logger;
}

export class Activities {
  readonly #options: ActivitiesOptions;
  /** Each service's operator memo, by its name: what its activities kept. */
  readonly #memos = new Map<string, Record<string, unknown>>();

  constructor(options: ActivitiesOptions) {
    this.#options = options;
  }

  /**
   * Calls every service's startup handlers, the services at once, until each has succeeded. Throws
   * ActivityFailed, naming the handler and its service, as soon as one fails for good.
   */
  async startup(): Promise<void> {
    const stop = new AbortController();
    await Promise.all(
      this.#targets('startup').map(async ({ service, specs }) => {
        const { failures } = await this.#settle(service, 'startup', specs, stop.signal);
        if (failures.length > 0) {
          stop.abort(); // the other services' startups are of no use now
          throw new ActivityFailed(`cannot start: ${failures.join('; ')}`);
        }
      }),
    );
  }

  /**
   * Calls the startup handlers of a service that joins the running gateway (a FunctionService object
   * added, say), until they have succeeded: whether they did. A failure for good is logged.
   */
  async startupOf(service: FunctionService, signal: AbortSignal): Promise<boolean> {
    const specs = activitiesOf(service, 'startup');
    if (specs.length === 0) return true;
    const { failures, unfinished } = await this.#settle(service, 'startup', specs, signal);
    for (const failure of failures) this.#options.logger.error(failure);
    return failures.length === 0 && unfinished.length === 0;
  }

  /** Calls every service's cleanup handlers for `timeoutMs` at most; what fails or is left is logged. */
  async cleanup(timeoutMs: number): Promise<void> {
    const { logger } = this.#options;
    const until = Date.now() + timeoutMs;
    const deadline = AbortSignal.timeout(timeoutMs);
    await Promise.all(
      this.#targets('cleanup').map(async ({ service, specs }) => {
        const { failures, unfinished } = await this.#settle(service, 'cleanup', specs, deadline, until);
        for (const failure of failures) logger.error(failure);
        if (unfinished.length > 0) {
          logger.warning(
            `cleanup handlers ${unfinished.join(', ')} of "${service.name}" did not finish within ` +
              `${timeoutMs / 1000}s: stopping without them`,
          );
        }
      }),
    );
  }

  /** Calls every service's probes once (no retries), the services at once. */
  async probe(): Promise<ProbeRound[]> {
    return Promise.all(
      this.#targets('probe').map(async ({ service, specs }): Promise<ProbeRound> => {
        const timeouts = specs
          .flatMap((spec) => spec.options?.timeout ?? [])
          .map((seconds) => seconds * 1000);
        const answer = await callActivity(
          service,
          {
            activity: 'probe',
            handlers: specs.map((spec) => ({ id: spec.id, retry: 0, started: new Date().toISOString() })),
            memo: this.#memo(service),
            timeoutMs: Math.min(service.timeoutMs, ...timeouts),
          },
          this.#options.retryDelaysS,
          this.#options.logger,
        );
        this.#remember(service, answer.memo);
        const round: ProbeRound = {
          service: service.name,
          results: {},
          failures: [],
          ...(service.inProcess ? { inProcess: true } : {}),
        };
        if (answer.down) return round; // the liveness endpoint says so, from the service's breaker
        for (const spec of specs) {
          const outcome = answer.outcomes[spec.id] as Outcome;
          if (outcome.status === 'success') round.results[spec.id] = outcome.result ?? null;
          else {
            // The liveness endpoint says what the gateway knows; what the service said, in its log only.
            round.failures.push(
              `probe "${spec.id}" of "${service.name}" failed (${outcome.status}; why, in the gateway's log)`,
            );
            this.#options.logger.warning('probe failed', {
              service: service.name,
              handler: spec.id,
              err: messageOf(outcome),
            });
          }
        }
        return round;
      }),
    );
  }

  /**
   * Calls the login handler of `service` until it has succeeded, and returns the credentials it gave.
   * Throws ActivityFailed when it fails for good, gives what is no credentials, or `signal` aborts
   * first (the gateway stopping: no request waits for a login that will not come).
   */
  async login(service: FunctionService, signal: AbortSignal): Promise<Credentials> {
    const specs = activitiesOf(service, 'login');
    const [spec] = specs;
    if (!spec || specs.length > 1) {
      throw new ActivityFailed(
        `function service "${service.name}" has ${specs.length} login handlers; the gateway logs in ` +
          'through exactly one',
      );
    }
    const { results, failures, unfinished } = await this.#settle(service, 'login', specs, signal);
    if (failures.length > 0) throw new ActivityFailed(`cannot log in: ${failures.join('; ')}`);
    if (unfinished.length > 0) throw new ActivityFailed(`the login through "${service.name}" was given up`);
    const credentials = results.get(spec.id);
    const problem = credentialsProblem(credentials);
    if (problem) {
      throw new ActivityFailed(
        `login handler "${spec.id}" of "${service.name}" gave no credentials: ${problem}`,
      );
    }
    return credentials as Credentials;
  }

  /** The services with handlers of `kind`, and those handlers. */
  #targets(kind: ActivityKind): { service: FunctionService; specs: ActivitySpec[] }[] {
    return this.#options
      .services()
      .map((service) => ({ service, specs: activitiesOf(service, kind) }))
      .filter(({ specs }) => specs.length > 0);
  }

  /**
   * Calls the service's handlers of `kind` (those due, together) until each has succeeded or failed
   * for good, or `signal` aborts; no call outlasts `until` (ms since the epoch) when given. A service
   * that is down is waited for.
   */
  async #settle(
    service: FunctionService,
    kind: ActivityKind,
    specs: readonly ActivitySpec[],
    signal: AbortSignal,
    until = Number.POSITIVE_INFINITY,
  ): Promise<Settled> {
    const { logger, retryDelaysS } = this.#options;
    const name = (spec: ActivitySpec) => `${kind} handler "${spec.id}" of function service "${service.name}"`;
    const start = Date.now();
    const pending = new Map(specs.map((spec) => [spec.id, { spec, retry: 0, started: start, dueAt: start }]));
    const settled: Settled = { results: new Map(), failures: [], unfinished: [] };
    while (pending.size > 0 && !signal.aborted) {
      const now = Date.now();
      const due = [...pending.values()].filter((attempt) => attempt.dueAt <= now);
      if (due.length === 0) {
        await sleep(Math.min(...[...pending.values()].map((attempt) => attempt.dueAt)) - now, signal);
        continue;
      }
      const answer = await callActivity(
        service,
        {
          activity: kind,
          handlers: due.map(dueActivity),
          memo: this.#memo(service),
          timeoutMs: Math.min(service.timeoutMs, until - now),
        },
        retryDelaysS,
        logger,
      );
      this.#remember(service, answer.memo);
      if (answer.down) {
        await Promise.race([answer.down, aborted(signal).catch(() => {})]);
        continue;
      }
      for (const attempt of due) {
        const step = nextStep(attempt, answer.outcomes[attempt.spec.id] as Outcome, Date.now());
        if ('done' in step) {
          pending.delete(attempt.spec.id);
          settled.results.set(attempt.spec.id, step.result);
          logger.info(`${name(attempt.spec)} succeeded`);
        } else if ('failed' in step) {
          pending.delete(attempt.spec.id);
          settled.failures.push(`${name(attempt.spec)} ${step.failed}`);
        } else {
          logger.warning(`${name(attempt.spec)} failed, retrying in ${step.delaySeconds}s: ${step.message}`);
          Object.assign(attempt, { retry: attempt.retry + 1, dueAt: step.retryAt });
        }
      }
      if (settled.failures.length > 0 && kind !== 'cleanup') break; // no use going on
    }
    settled.unfinished = [...pending.keys()];
    return settled;
  }

  #memo(service: FunctionService): Record<string, unknown> {
    return this.#memos.get(service.name) ?? {};
  }

  /** Applies a call's memo updates: `null` removes a key. */
  #remember(service: FunctionService, updates: Record<string, unknown> | undefined): void {
    if (updates) this.#memos.set(service.name, updatedMemo(this.#memo(service), updates));
  }
}

/** The service's handlers of one activity, in its manifest's order. */
export function activitiesOf(service: FunctionService, kind: ActivityKind): ActivitySpec[] {
  return (service.manifest.activities ?? []).filter((activity) => activity.kind === kind);
}

function dueActivity(attempt: Attempt): DueActivity {
  return { id: attempt.spec.id, retry: attempt.retry, started: new Date(attempt.started).toISOString() };
}

function messageOf(outcome: Outcome): string {
  return 'message' in outcome ? outcome.message : outcome.status;
}
