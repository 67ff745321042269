/**
 * Kopf's daemons: one long call per matching object, while the object exists and matches. A call
 * lasts a round at most (`roundMs`; hosts such as Workers bound how long a call may last, and
 * proxies cut idle connections): the handler's `stopped` signal ends the round, it returns, and the
 * gateway calls it again at once, its memo kept. So there is always one call open per daemon.
 *
 * Stopping (the object deleted or no longer matching, the gateway exiting): the gateway tells the
 * daemon why with a call of its own, then waits for its call to end, for `cancellationTimeout`
 * seconds at most (the round's end without one) before cutting it off. Our finalizer holds a deleted
 * object until its daemons have ended.
 *
 * A daemon that returns by itself, fails permanently or runs out of retries is not called again until
 * the object changes. A temporary failure calls it again after its delay; a service that fails or
 * is down (a crash) is called again as for any handler, which restarts its daemons.
 */
import type { DaemonStopReason, DueHandler, KubernetesObject, Outcome } from '../../protocol/index.ts';
import { callServices, idempotencyKey, type RetryDelays, type ServiceAnswer } from '../dispatch/calls.ts';
import type { WatchEventType } from '../kube/watcher.ts';
import type { Logger } from '../logging.ts';
import type { ReactorApi } from '../reactor/api.ts';
import type { ObjectMemory } from '../reactor/memory.ts';
import { candidatesOf, objectName, type ServedResource } from '../reactor/model.ts';
import { collectEffects, emptyEffects } from '../reactor/outcomes.ts';
import { othersResultKeys } from '../reactor/places.ts';
import { exhaustion } from '../reactor/plan.ts';
import { essenceOf, serializeEssence } from '../state/essence.ts';
import { sleep } from '../timing.ts';
import { type BoundHandler, handlerKey, matchingHandlers, stillBound, writeEffects } from './background.ts';

export interface DaemonsOptions {
  served: ServedResource;
  api: ReactorApi;
  /** The reactor's memory of objects: daemons read and update the same memo as other handlers. */
  memory: ObjectMemory;
  /** How long one call of a daemon lasts before it is called again. */
  roundMs: number;
  /** Seconds before calling a service again that could not be reached or answered badly. */
  retryDelaysS: RetryDelays;
  /** Our annotations, which are not a change of the object (see essence.ts). */
  annotationPrefix: string;
  logger: Logger;
}

interface Daemon extends BoundHandler {
  object: Watched;
  /** What the service knows this daemon's calls by (so a stop call can find it). */
  key: string;
  retry: number;
  started: string;
  /** Set once it is to stop; its sleeps end then. */
  stopping: AbortController;
  /** The call in flight, cut off when a stop is not heeded in time. */
  call?: AbortController;
  /** Resolves when it has ended (returned, failed for good, or stopped). */
  ended: Promise<void>;
  finished: boolean;
  /** Ended by itself: not called again until the essence differs from this one. */
  haltedAt?: string;
  /** Its last call returned because its round ended: asked to stop before the next, it has not heard why. */
  betweenRounds?: boolean;
}

interface Watched {
  latest: KubernetesObject;
  daemons: Map<string, Daemon>;
}

/** A stop call is made once: a daemon it does not reach learns at its round's end, or is cut off. */
const NO_RETRIES: RetryDelays = [0];

/** The daemon as its calls name it: the service finds its running call by the idempotency key. */
function dueOf(daemon: Daemon): DueHandler {
  return { id: daemon.spec.id, retry: daemon.retry, started: daemon.started, idempotencyKey: daemon.key };
}

export class Daemons {
  readonly #options: DaemonsOptions;
  readonly #objects = new Map<string, Watched>();
  #stopped = false;

  constructor(options: DaemonsOptions) {
    this.#options = options;
  }

  /** Every watch event: starts the object's daemons, and stops those it no longer matches. */
  observe(type: WatchEventType, object: KubernetesObject): void {
    if (this.#stopped) return;
    const uid = object.metadata.uid;
    const matching = type === 'DELETED' ? [] : matchingHandlers(this.#options.served, 'daemon', object);
    let watched = this.#objects.get(uid);
    if (!watched) {
      if (matching.length === 0) return;
      watched = { latest: object, daemons: new Map() };
      this.#objects.set(uid, watched);
    }
    watched.latest = object;
    const deleted = type === 'DELETED' || object.metadata.deletionTimestamp !== undefined;
    const keep = new Set(matching.map(handlerKey));
    for (const [key, daemon] of watched.daemons) {
      if (!keep.has(key)) void this.#stop(daemon, deleted ? 'resource-deleted' : 'filters-mismatch');
    }
    if (type === 'DELETED') {
      // Gone: what halted daemons kept goes too, once every daemon has ended.
      const gone = watched;
      void Promise.all([...gone.daemons.values()].map((daemon) => daemon.ended)).then(() => {
        if (this.#objects.get(uid) === gone) this.#objects.delete(uid);
      });
      return;
    }
    let essence: string | undefined;
    for (const handler of matching) {
      const running = watched.daemons.get(handlerKey(handler));
      if (running?.haltedAt !== undefined) {
        essence ??= serializeEssence(essenceOf(object, this.#options.annotationPrefix));
        if (essence === running.haltedAt) continue;
      } else if (running) {
        continue;
      }
      this.#start(watched, handler);
    }
  }

  /** Daemons running now, over every object (those halted or ended not counted). */
  get running(): number {
    let count = 0;
    for (const watched of this.#objects.values())
      for (const daemon of watched.daemons.values()) if (!daemon.finished) count++;
    return count;
  }

  /**
   * Resolves once the object's daemons have ended, or undefined when none runs: a deletion waits for
   * it before our finalizer lets the object go.
   */
  ended(uid: string): Promise<void> | undefined {
    const daemons = [...(this.#objects.get(uid)?.daemons.values() ?? [])].filter(
      (daemon) => !daemon.finished,
    );
    if (daemons.length === 0) return undefined;
    return Promise.all(daemons.map((daemon) => daemon.ended)).then(() => undefined);
  }

  /** Stops every daemon (the gateway exits) and waits for them. */
  async stop(): Promise<void> {
    this.#stopped = true;
    const all = [...this.#objects.values()].flatMap((watched) => [...watched.daemons.values()]);
    await Promise.all(all.map((daemon) => this.#stop(daemon, 'operator-exiting')));
  }

  #start(watched: Watched, handler: BoundHandler): void {
    const started = new Date().toISOString();
    const uid = watched.latest.metadata.uid;
    const daemon = {
      ...handler,
      object: watched,
      key: idempotencyKey(uid, handler.spec.id, 'daemon', started, handler.service.name),
      retry: 0,
      started,
      stopping: new AbortController(),
      finished: false,
    } as Daemon;
    daemon.ended = this.#run(daemon).finally(() => {
      daemon.finished = true;
      if (daemon.haltedAt !== undefined) return; // kept, to know when the object has changed
      if (watched.daemons.get(handlerKey(daemon)) === daemon) watched.daemons.delete(handlerKey(daemon));
      if (watched.daemons.size === 0 && this.#objects.get(uid) === watched) this.#objects.delete(uid);
    });
    watched.daemons.set(handlerKey(daemon), daemon);
  }

  async #run(daemon: Daemon): Promise<void> {
    const { served, memory, roundMs, logger } = this.#options;
    const { spec, service, object, stopping } = daemon;
    const log = logger.child({ object: objectName(object.latest) });
    await sleep((spec.options?.initialDelay ?? 0) * 1000, stopping.signal);
    while (!stopping.signal.aborted && stillBound(served, daemon)) {
      const uid = object.latest.metadata.uid;
      // A connection of its service's budget for the round: over it, the daemon waits its turn (the
      // daemons running give theirs back at their round's end, and queue again behind it).
      const connections = service.budgets?.daemons;
      try {
        await connections?.acquire(1, stopping.signal);
      } catch {
        break; // stopped while waiting: it had no call open to be told of it
      }
      daemon.call = new AbortController();
      const [answer] = await callServices(
        [{ service, handlers: [dueOf(daemon)] }],
        {
          reason: 'daemon',
          resource: served.resource,
          object: object.latest,
          memoOf: (name) => memory.memoOf(uid, name),
          othersResults: (one) => othersResultKeys(candidatesOf(served), one),
          timeoutMs: roundMs,
          long: { cut: daemon.call.signal, graceMs: service.timeoutMs },
        },
        this.#options.retryDelaysS,
        log,
      ).finally(() => connections?.release(1));
      daemon.call = undefined;
      const outcome = await this.#settle(daemon, answer, log);
      if (!outcome) {
        await Promise.race([answer?.down, sleep(roundMs, stopping.signal)]); // the service is down
        continue;
      }
      daemon.betweenRounds = outcome.status === 'success' && outcome.roundEnded === true;
      if (stopping.signal.aborted) break;
      const next = this.#next(daemon, outcome, log);
      if (next === 'halt') {
        daemon.haltedAt = serializeEssence(essenceOf(object.latest, this.#options.annotationPrefix));
        return;
      }
      await sleep(next, stopping.signal);
    }
    if (stopping.signal.aborted && daemon.betweenRounds) await this.#lastCall(daemon, log);
    log.debug('daemon stopped', {
      handler: spec.id,
      why: stopping.signal.reason ?? 'its handler was removed',
    });
  }

  /** What a call returned, kept: the memo updated and the effects written; its outcome, if it has one. */
  async #settle(
    daemon: Daemon,
    answer: ServiceAnswer | undefined,
    log: Logger,
  ): Promise<Outcome | undefined> {
    const uid = daemon.object.latest.metadata.uid;
    if (answer?.memo) this.#options.memory.updateMemo(uid, daemon.service.name, answer.memo);
    const outcome = answer?.outcomes[daemon.spec.id];
    if (!outcome) return undefined;
    const effects = emptyEffects();
    collectEffects(effects, outcome, daemon.key);
    await writeEffects(this.#options.api, daemon.object.latest, effects, log);
    return outcome;
  }

  /**
   * A daemon asked to stop while between rounds (or as one ended) has not heard why: it is called once
   * more with its `stopped` signal aborted for that reason, to finish as it would have, within its
   * cancellationTimeout (a round without one).
   */
  async #lastCall(daemon: Daemon, log: Logger): Promise<void> {
    const { served, memory, roundMs } = this.#options;
    const timeout = daemon.spec.options?.cancellationTimeout;
    const connections = daemon.service.budgets?.daemons;
    await connections?.acquire(1);
    daemon.call = new AbortController();
    const [answer] = await callServices(
      [{ service: daemon.service, handlers: [dueOf(daemon)] }],
      {
        reason: 'daemon',
        resource: served.resource,
        object: daemon.object.latest,
        memoOf: (name) => memory.memoOf(daemon.object.latest.metadata.uid, name),
        othersResults: (one) => othersResultKeys(candidatesOf(served), one),
        stopped: daemon.stopping.signal.reason as DaemonStopReason,
        timeoutMs: timeout === undefined ? roundMs : timeout * 1000,
        long: { cut: daemon.call.signal, graceMs: timeout === undefined ? daemon.service.timeoutMs : 0 },
      },
      NO_RETRIES,
      log,
    ).finally(() => connections?.release(1));
    daemon.call = undefined;
    await this.#settle(daemon, answer, log);
  }

  /** After a call: how long until the next one, or `halt` until the object changes. */
  #next(daemon: Daemon, outcome: Outcome, log: Logger): number | 'halt' {
    const { spec } = daemon;
    switch (outcome.status) {
      case 'success':
        if (outcome.roundEnded) {
          daemon.retry = 0;
          return 0;
        }
        log.info('daemon returned; not called again until the object changes', { handler: spec.id });
        return 'halt';
      case 'temporary': {
        const retries = daemon.retry + 1;
        const exhausted = exhaustion(spec, { started: daemon.started, retries }, new Date());
        if (exhausted) {
          log.error('daemon given up; not called again until the object changes', {
            handler: spec.id,
            err: exhausted,
          });
          return 'halt';
        }
        daemon.retry = retries;
        log.warning('daemon failed temporarily', {
          handler: spec.id,
          retry: retries,
          delaySeconds: outcome.delay,
          err: outcome.message,
        });
        return outcome.delay * 1000;
      }
      case 'skipped':
        return 'halt';
      case 'permanent':
      case 'denied':
        log.error('daemon failed permanently; not called again until the object changes', {
          handler: spec.id,
          err: outcome.message,
        });
        return 'halt';
    }
  }

  /** Tells the daemon why it is to stop, and cuts its call off if it has not ended in time. */
  async #stop(daemon: Daemon, reason: DaemonStopReason): Promise<void> {
    if (daemon.stopping.signal.aborted) return daemon.ended;
    daemon.stopping.abort(reason);
    if (daemon.call) {
      const { served, logger } = this.#options;
      const log = logger.child({ object: objectName(daemon.object.latest) });
      await callServices(
        [{ service: daemon.service, handlers: [dueOf(daemon)] }],
        { reason: 'daemon', resource: served.resource, object: daemon.object.latest, stop: reason },
        NO_RETRIES,
        log,
      );
      const timeout = daemon.spec.options?.cancellationTimeout;
      if (timeout !== undefined) {
        const call = daemon.call;
        // Through sleep: a timeout longer than a timer holds (some 24.8 days) would fire at once.
        const ended = new AbortController();
        void daemon.ended.finally(() => ended.abort());
        void sleep(timeout * 1000, ended.signal).then(() => {
          if (!ended.signal.aborted) call?.abort(`no return within ${timeout}s of being stopped`);
        });
      }
    }
    return daemon.ended;
  }
}
