/**
 * Kopf's in-memory indexes, kept by the gateway. For each index a service declares (`op.index`), every
 * object of its resource that matches the index's filters puts values under keys. A declarative index
 * the gateway reads from each object itself, with no call; a function's, it asks the service for in
 * batches of objects (one batch in flight per service and resource, an object's changes coalesced
 * while it waits). Handlers that name an index in their `indexes` option get it with their calls,
 * complete: after a start, once its resource is listed and every listed object indexed.
 *
 * Errors, per object, as Kopf's: a temporary one removes the object's values and asks again after its
 * delay, until the index's `retries` or `timeout` run out; a permanent one (or running out) removes
 * them until the object changes. A call that fails as a whole (the service down, a bad answer) keeps
 * the values, and is made again later. Kept in memory only: after a restart, indexes are built anew.
 */
import type {
  DueHandler,
  HandlerSpec,
  IndexContents,
  IndexDefinition,
  IndexEntries,
  InvocationRequest,
  KubernetesObject,
  ObjectPart,
  Outcome,
} from '../../protocol/index.ts';
import { deepFreeze, equal, jsonCopy, valueAt } from '../../protocol/json.ts';
import type { Budget, Budgets } from '../dispatch/budget.ts';
import { idempotencyKey, type RetryDelays } from '../dispatch/calls.ts';
import { type FunctionService, type IndexSource, ServiceDown } from '../dispatch/function-service.ts';
import { invocationRequest } from '../dispatch/invocation.ts';
import { parseIndexEntries } from '../dispatch/validation.ts';
import type { WatchEventType } from '../kube/watcher.ts';
import type { Logger } from '../logging.ts';
import { objectMatches } from '../reactor/filters.ts';
import { objectName, type ServedResource } from '../reactor/model.ts';
import { exhaustion } from '../reactor/plan.ts';
import { backoffDelay, sleep } from '../timing.ts';
import { Scheduler } from './scheduler.ts';

/** What an index may hold: of one object's values, and of all its service's indexes (a budget). */
export interface IndexLimits {
  bytesPerObject: number;
  budget: Budget;
}

/**
 * One index: the values each object put in, and the contents handlers get, made again after a change.
 * Frozen, values and contents: every call that reads the index shares them until the next change.
 * Held to `limits` when given: a service chooses its values, and every call that reads the index
 * carries them.
 */
export class IndexStore {
  readonly #byObject = new Map<string, { entries: IndexEntries; bytes: number }>();
  readonly #limits: IndexLimits | undefined;
  #contents: IndexContents | undefined;

  constructor(limits?: IndexLimits) {
    this.#limits = limits;
  }

  /**
   * The object's values (copied), replacing those it had; none removes it. Values beyond the limits
   * are not kept (nor those the object had): says why, undefined when they are kept.
   */
  set(uid: string, entries: IndexEntries): string | undefined {
    if (entries.length === 0) {
      this.remove(uid);
      return undefined;
    }
    const had = this.#byObject.get(uid);
    if (equal(had?.entries, entries)) return undefined;
    const bytes = Buffer.byteLength(JSON.stringify(entries));
    const limits = this.#limits;
    if (limits) {
      const refused =
        bytes > limits.bytesPerObject
          ? `its values are ${bytes} bytes, over the ${limits.bytesPerObject} one object may put in an index (calls.indexBytesPerObject)`
          : bytes > (had?.bytes ?? 0) && !limits.budget.take(bytes - (had?.bytes ?? 0))
            ? `its values (${bytes} bytes) would take the service's indexes over their budget of ${limits.budget.limit} bytes (calls.indexBytesPerService)`
            : undefined;
      if (refused) {
        this.remove(uid);
        return refused;
      }
      if (had && had.bytes > bytes) limits.budget.release(had.bytes - bytes);
    }
    // A copy: a declarative index's values are parts of the watched object.
    const copy = jsonCopy(entries);
    deepFreeze(copy);
    this.#byObject.set(uid, { entries: copy, bytes });
    this.#contents = undefined;
    return undefined;
  }

  remove(uid: string): void {
    const had = this.#byObject.get(uid);
    if (!had) return;
    this.#byObject.delete(uid);
    this.#limits?.budget.release(had.bytes);
    this.#contents = undefined;
  }

  /** Objects with values in the index. */
  get size(): number {
    return this.#byObject.size;
  }

  /** Each key with its values, in the order the objects were first indexed. */
  contents(): IndexContents {
    if (this.#contents) return this.#contents;
    const byKey = new Map<string | null, unknown[]>();
    for (const { entries } of this.#byObject.values()) {
      for (const [key, value] of entries) {
        const values = byKey.get(key);
        if (values) values.push(value);
        else byKey.set(key, [value]);
      }
    }
    const contents = [...byKey];
    deepFreeze(contents);
    this.#contents = contents;
    return contents;
  }
}

/**
 * What a declarative index holds of an object: one value under the key its parts make, or nothing when
 * one of them is missing.
 */
export function declaredEntries({ key, value }: IndexDefinition, object: KubernetesObject): IndexEntries {
  let indexKey: string | null = null;
  if (key) {
    const parts = key.map((part) => partOf(object, part));
    if (parts.some((part) => part === undefined || part === null)) return [];
    indexKey = parts.map((part) => (typeof part === 'string' ? part : JSON.stringify(part))).join('/');
  }
  const indexed =
    value === undefined
      ? objectName(object)
      : Array.isArray(value)
        ? value.map((part) => partOf(object, part) ?? null)
        : (partOf(object, value) ?? null);
  return [[indexKey, indexed]];
}

function partOf(object: KubernetesObject, part: ObjectPart): unknown {
  if ('field' in part) return valueAt(object, part.field);
  if ('label' in part) return object.metadata.labels?.[part.label];
  return object.metadata.annotations?.[part.annotation];
}

export interface IndexesOptions {
  /** Objects in one call of a service's index functions, at most. */
  batchSize: number;
  /** Bytes of objects in one such call, at most (a single larger object goes alone). */
  batchBytes: number;
  /** Seconds before asking again a service that could not be reached or answered badly, by retry. */
  retryDelaysS: RetryDelays;
  /** Bytes of the values one object puts in one index, at most. */
  bytesPerObject?: number;
  /** Each service's budgets: its indexes' values are held to its budget of index bytes. */
  budgets?: Budgets;
  /** Aborted when the gateway stops: handlers then wait for no index any more. */
  stopping: AbortSignal;
  logger: Logger;
}

/** The gateway's indexes, by service and id, fed by one IndexFeed per served resource. */
export class Indexes implements IndexSource {
  readonly #options: IndexesOptions;
  readonly #stores = new Map<string, IndexStore>();
  readonly #feeds = new Set<IndexFeed>();
  /** Resolves when the gateway stops. */
  readonly #stopped: Promise<void>;

  constructor(options: IndexesOptions) {
    this.#options = options;
    this.#stopped = new Promise((resolve) =>
      options.stopping.addEventListener('abort', () => resolve(), { once: true }),
    );
  }

  /** What indexes the objects of one served resource. */
  feed(served: ServedResource): IndexFeed {
    const feed: IndexFeed = new IndexFeed(
      served,
      this.#options,
      this.#stopped,
      (service, id) => this.store(service, id),
      () => this.#feeds.delete(feed),
    );
    this.#feeds.add(feed);
    return feed;
  }

  store(service: string, id: string): IndexStore {
    const key = `${service}\0${id}`;
    let store = this.#stores.get(key);
    if (!store) {
      const { budgets, bytesPerObject = Number.POSITIVE_INFINITY } = this.#options;
      store = new IndexStore(budgets && { bytesPerObject, budget: budgets.of(service).indexBytes });
      this.#stores.set(key, store);
    }
    return store;
  }

  /** An index whose resource is not served (yet) is empty, and complete. */
  async contents(service: string, ids: readonly string[]): Promise<Record<string, IndexContents>> {
    const contents: Record<string, IndexContents> = {};
    for (const id of ids) {
      const feed = [...this.#feeds].find((candidate) => candidate.declares(service, id));
      if (feed && !feed.isReady) await Promise.race([feed.ready, this.#stopped]);
      contents[id] = feed ? this.store(service, id).contents() : [];
    }
    return contents;
  }
}

/** A function index on one object: what was indexed, and how asking is going. */
interface Indexing {
  spec: HandlerSpec;
  /** The resourceVersion last answered for (or given up at): the same again is not asked. */
  answered?: string;
  /** While failing temporarily: the attempt, when the first was made, and the object to ask again. */
  failing?: { retry: number; started: string; object: KubernetesObject };
}

/** Indexes the objects of one resource, as its watch shows them. */
export class IndexFeed {
  readonly #served: ServedResource;
  readonly #options: IndexesOptions;
  readonly #gatewayStopped: Promise<void>;
  readonly #store: (service: string, id: string) => IndexStore;
  readonly #detach: () => void;
  /** The objects it has seen and not seen deleted: what it may have put in the stores. */
  readonly #seen = new Set<string>();
  /** Objects to ask a service's index functions about, by service name, then uid: the newest state. */
  readonly #pending = new Map<string, Map<string, KubernetesObject>>();
  /** Function indexes' progress, by uid, then service and index id. */
  readonly #indexing = new Map<string, Map<string, Indexing>>();
  readonly #inFlight = new Map<string, Promise<void>>();
  /** Calls that failed as a whole in a row, by service: how long to wait before the next. */
  readonly #failures = new Map<string, number>();
  readonly #retries: Scheduler<Indexing>;
  readonly #listings: Promise<void>[] = [];
  readonly #watching = Promise.withResolvers<void>();
  #idle: Array<() => void> = [];
  #flushing: NodeJS.Immediate | undefined;
  #stopped = false;
  /** Resolves once the first listing is indexed: every listed object, by every index. */
  readonly ready: Promise<void>;
  isReady = false;

  constructor(
    served: ServedResource,
    options: IndexesOptions,
    gatewayStopped: Promise<void>,
    store: (service: string, id: string) => IndexStore,
    detach: () => void,
  ) {
    this.#served = served;
    this.#options = options;
    this.#gatewayStopped = gatewayStopped;
    this.#store = store;
    this.#detach = detach;
    this.#retries = new Scheduler((due) => {
      for (const indexing of due) this.#askAgain(indexing);
    });
    this.ready = this.#watching.promise
      .then(() => Promise.all(this.#listings))
      .then(() => this.#settled())
      .then(() => {
        this.isReady = true;
      });
  }

  /** A first listing the watch makes at its start. */
  listing(listed: Promise<void>): void {
    this.#listings.push(listed);
  }

  /** The watch has started: its first listings are all known. */
  watching(): void {
    this.#watching.resolve();
  }

  /** Whether `service` has an index `id` on this resource. */
  declares(service: string, id: string): boolean {
    return this.#served.bindings.some(
      (binding) =>
        binding.service.name === service &&
        binding.handlers.some((spec) => spec.kind === 'index' && spec.id === id),
    );
  }

  /** Every watch event: indexes the object (or asks for it to be), or removes it. */
  observe(type: WatchEventType, object: KubernetesObject): void {
    if (this.#stopped) return;
    const uid = object.metadata.uid;
    if (type === 'DELETED') this.#seen.delete(uid);
    else this.#seen.add(uid);
    for (const { service, handlers } of this.#served.bindings) {
      for (const spec of handlers) {
        if (spec.kind !== 'index') continue;
        const store = this.#store(service.name, spec.id);
        if (type === 'DELETED' || !objectMatches(object, spec.filters)) {
          store.remove(uid);
          this.#forget(uid, service.name, spec.id);
        } else if (spec.index) {
          const refused = store.set(uid, declaredEntries(spec.index, object));
          if (refused) this.#refused(object, service.name, spec.id, refused);
        } else {
          const indexing = this.#indexingOf(uid, service.name, spec);
          if (indexing.spec === spec && indexing.answered === object.metadata.resourceVersion) continue;
          indexing.spec = spec;
          this.#pend(service.name, object);
        }
      }
    }
    if (type === 'DELETED') {
      this.#indexing.delete(uid);
      for (const pending of this.#pending.values()) pending.delete(uid);
      this.#checkIdle();
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#retries.stop();
    clearImmediate(this.#flushing);
    this.#watching.resolve();
    this.#checkIdle();
    await Promise.all(this.#inFlight.values());
  }

  /**
   * Takes out of the indexes what this feed put there, once stopped with no call left that reads them:
   * the replica no longer watches the resource, and the feed that replaces it lists it again.
   */
  clear(): void {
    this.#detach();
    for (const { service, handlers } of this.#served.bindings) {
      for (const spec of handlers) {
        if (spec.kind !== 'index') continue;
        const store = this.#store(service.name, spec.id);
        for (const uid of this.#seen) store.remove(uid);
      }
    }
    this.#seen.clear();
    this.#indexing.clear();
  }

  #indexingOf(uid: string, service: string, spec: HandlerSpec): Indexing {
    let byIndex = this.#indexing.get(uid);
    if (!byIndex) {
      byIndex = new Map();
      this.#indexing.set(uid, byIndex);
    }
    const key = `${service}\0${spec.id}`;
    let indexing = byIndex.get(key);
    if (!indexing) {
      indexing = { spec };
      byIndex.set(key, indexing);
    }
    return indexing;
  }

  #forget(uid: string, service: string, id: string): void {
    const byIndex = this.#indexing.get(uid);
    const indexing = byIndex?.get(`${service}\0${id}`);
    if (!indexing) return;
    this.#retries.cancel(indexing);
    byIndex?.delete(`${service}\0${id}`);
    if (byIndex?.size === 0) this.#indexing.delete(uid);
  }

  #pend(service: string, object: KubernetesObject): void {
    let pending = this.#pending.get(service);
    if (!pending) {
      pending = new Map();
      this.#pending.set(service, pending);
    }
    pending.set(object.metadata.uid, object);
    // The events of one listing page arrive in one go: they make one batch.
    this.#flushing ??= setImmediate(() => {
      this.#flushing = undefined;
      for (const name of this.#pending.keys()) this.#flush(name);
    });
  }

  /** A temporary failure's delay has passed: ask about the object again. */
  #askAgain(indexing: Indexing): void {
    if (this.#stopped || !indexing.failing) return;
    const service = this.#served.bindings.find(({ handlers }) => handlers.includes(indexing.spec))?.service;
    if (!service) return;
    const { object } = indexing.failing;
    if (!this.#pending.get(service.name)?.has(object.metadata.uid)) this.#pend(service.name, object);
  }

  /** Sends the service's next batch, unless one is in flight (it sends the next when answered). */
  #flush(name: string): void {
    const pending = this.#pending.get(name);
    if (this.#stopped || this.#inFlight.has(name) || !pending || pending.size === 0) return;
    const service = this.#served.bindings.find((binding) => binding.service.name === name)?.service;
    if (!service) {
      this.#pending.delete(name); // its service is gone, and its indexes with it
      this.#checkIdle();
      return;
    }
    const calls = this.#batch(service, pending);
    const sending = calls.length === 0 ? Promise.resolve() : this.#send(service, calls);
    const done = sending.finally(() => {
      this.#inFlight.delete(name);
      this.#flush(name);
      this.#checkIdle();
    });
    this.#inFlight.set(name, done);
  }

  /** Takes objects off the pending ones, up to a batch, as calls of the index functions due for each. */
  #batch(service: FunctionService, pending: Map<string, KubernetesObject>): Call[] {
    const calls: Call[] = [];
    let bytes = 0;
    for (const [uid, object] of pending) {
      if (calls.length >= this.#options.batchSize) break;
      const handlers = this.#dueHandlers(service, object);
      if (handlers.length === 0) {
        pending.delete(uid);
        continue;
      }
      const request = invocationRequest('index', this.#served.resource, object, handlers, service.timeoutMs);
      const size = JSON.stringify(request).length;
      if (calls.length > 0 && bytes + size > this.#options.batchBytes) break;
      bytes += size;
      pending.delete(uid);
      calls.push({ request, object });
    }
    return calls;
  }

  #dueHandlers(service: FunctionService, object: KubernetesObject): DueHandler[] {
    const uid = object.metadata.uid;
    const version = object.metadata.resourceVersion ?? '';
    const binding = this.#served.bindings.find((candidate) => candidate.service === service);
    return (binding?.handlers ?? []).flatMap((spec): DueHandler[] => {
      if (spec.kind !== 'index' || spec.index || !objectMatches(object, spec.filters)) return [];
      const indexing = this.#indexing.get(uid)?.get(`${service.name}\0${spec.id}`);
      if (!indexing || (indexing.spec === spec && indexing.answered === version)) return [];
      const failing = indexing.failing;
      const started = failing?.started ?? new Date().toISOString();
      return [
        {
          id: spec.id,
          retry: failing?.retry ?? 0,
          started,
          idempotencyKey: idempotencyKey(uid, spec.id, 'index', started, service.name),
        },
      ];
    });
  }

  async #send(service: FunctionService, calls: Call[]): Promise<void> {
    const log = this.#options.logger;
    try {
      const answer = await service.invokeBatch(calls.map((call) => call.request));
      this.#failures.delete(service.name);
      answer.batch.forEach((response, position) => {
        const { object, request } = calls[position] as Call;
        for (const line of response.logs) {
          log
            .child({ object: objectName(object) })
            .log(line.level, `${line.handler ? `${line.handler}: ` : ''}${line.message}`);
        }
        for (const due of request.handlers) {
          this.#settle(service, object, due, response.outcomes[due.id] as Outcome);
        }
      });
    } catch (error) {
      // Asked again later about the same objects (unless newer states are waiting); values are kept.
      const pending = this.#pending.get(service.name) ?? new Map<string, KubernetesObject>();
      this.#pending.set(service.name, pending);
      for (const { object } of calls) {
        if (!pending.has(object.metadata.uid)) pending.set(object.metadata.uid, object);
      }
      const failures = this.#failures.get(service.name) ?? 0;
      this.#failures.set(service.name, failures + 1);
      if (error instanceof ServiceDown) {
        await Promise.race([error.recovered, this.#gatewayStopped]);
        return;
      }
      const delay = backoffDelay({ delays: this.#options.retryDelaysS }, failures);
      log.warning('indexing failed', {
        service: service.name,
        objects: calls.length,
        delaySeconds: delay,
        err: error,
      });
      await sleep(delay * 1000, this.#options.stopping);
    }
  }

  /** What one index function answered for one object. */
  #settle(service: FunctionService, object: KubernetesObject, due: DueHandler, outcome: Outcome): void {
    const uid = object.metadata.uid;
    const indexing = this.#indexing.get(uid)?.get(`${service.name}\0${due.id}`);
    if (!indexing) return; // deleted, or no longer matching, meanwhile
    const store = this.#store(service.name, due.id);
    const log = this.#options.logger.child({ object: objectName(object) });
    const failure = this.#failure(indexing, due, outcome);
    // Asked again after a temporary failure; otherwise not until the object changes.
    if (typeof failure !== 'number') indexing.answered = object.metadata.resourceVersion;
    if (failure === undefined) {
      indexing.failing = undefined;
      if (outcome.status === 'skipped') store.remove(uid);
      else if (outcome.status === 'success' && outcome.result !== undefined) {
        const refused = store.set(uid, outcome.result as IndexEntries);
        if (refused) {
          this.#retries.cancel(indexing);
          this.#refused(object, service.name, due.id, refused);
        }
      }
      return;
    }
    store.remove(uid);
    if (typeof failure === 'number') {
      log.warning('index failed temporarily', {
        handler: due.id,
        retry: due.retry,
        delaySeconds: failure,
        err: describe(outcome),
      });
      indexing.failing = { retry: due.retry + 1, started: due.started, object };
      this.#retries.schedule(indexing, Date.now() + failure * 1000);
    } else {
      log.error('index failed; not asked again until the object changes', { handler: due.id, err: failure });
      this.#retries.cancel(indexing);
      indexing.failing = undefined;
    }
  }

  /** An object's values not kept, beyond the limits: until it changes, it is not in the index. */
  #refused(object: KubernetesObject, service: string, id: string, why: string): void {
    this.#options.logger
      .child({ object: objectName(object) })
      .error('index not updated; the object is left out of it until it changes', {
        service,
        handler: id,
        err: why,
      });
  }

  /**
   * Undefined for an answer to keep (a result checked), the seconds before asking again after a
   * temporary failure, or why the object is given up until it changes.
   */
  #failure(indexing: Indexing, due: DueHandler, outcome: Outcome): number | string | undefined {
    switch (outcome.status) {
      case 'success':
        if (outcome.result === undefined) return undefined;
        try {
          parseIndexEntries(outcome.result, `index ${due.id}`);
          return undefined;
        } catch (error) {
          return `answered badly: ${(error as Error).message}`;
        }
      case 'skipped':
        return undefined;
      case 'temporary': {
        const retries = due.retry + 1;
        const exhausted = exhaustion(indexing.spec, { started: due.started, retries }, new Date());
        return exhausted ? `failed: ${outcome.message} (${exhausted})` : outcome.delay;
      }
      case 'permanent':
      case 'denied':
        return `failed permanently: ${outcome.message}`;
    }
  }

  /** Resolves when nothing is waiting to be asked nor being asked (a retry's delay is not waited for). */
  #settled(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #isIdle(): boolean {
    return (
      this.#stopped ||
      (this.#inFlight.size === 0 && [...this.#pending.values()].every((pending) => pending.size === 0))
    );
  }

  #checkIdle(): void {
    if (this.#idle.length === 0 || !this.#isIdle()) return;
    const waiting = this.#idle;
    this.#idle = [];
    for (const resolve of waiting) resolve();
  }
}

interface Call {
  request: InvocationRequest;
  object: KubernetesObject;
}

function describe(outcome: Outcome): string {
  return 'message' in outcome ? outcome.message : outcome.status;
}
