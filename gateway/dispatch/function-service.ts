/**
 * The gateway's side of one function service: learns its name (the audience to sign for) from the
 * unsigned health check, fetches its manifest, and sends signed invocations with a deadline; or, for
 * an operator in the same process, asks it directly.
 */
import {
  type ActivityInvocation,
  type Health,
  type IndexContents,
  type InProcessCalls,
  type InvocationBatch,
  type InvocationRequest,
  type InvocationResponse,
  isActivityInvocation,
  MAX_DELAY_SECONDS,
  type Manifest,
  type Outcome,
  PATHS,
  PROTOCOL,
  type ServiceScope,
} from '../../protocol/index.ts';
import { equal, isObject, jsonCopy } from '../../protocol/json.ts';
import { ERROR_RESPONSE } from '../../protocol/schema/checks.ts';
import type { ServiceAccountName } from '../kube/client.ts';
import { type BatchLimits, CallBatches, type EncodedCall } from './batches.ts';
import type { CircuitBreaker } from './breaker.ts';
import { BudgetStalled, type ServiceBudgets } from './budget.ts';
import {
  type AnswerGuard,
  beyondPin,
  confineOutcomes,
  narrowedToScope,
  ScopeError,
  serviceAccountOf,
} from './scope.ts';
import type { Signer } from './signer.ts';
import {
  aborted,
  type Exchange,
  type Reply,
  ReplyTooLarge,
  type Transport,
  withDeadline,
} from './transport.ts';
import {
  batchAnswers,
  type IndexBatchResponse,
  ProtocolError,
  parseActivityResponse,
  parseBatchResponse,
  parseHealth,
  parseInvocationResponse,
  parseManifest,
} from './validation.ts';

export interface FunctionServiceOptions {
  transport: Transport;
  /**
   * The name the service must answer to, which every request is signed for (the audience). Pinned
   * in the gateway's configuration: a service elsewhere cannot choose the audience of the tokens it
   * gets. Undefined only for a service in this process, which is the gateway's own code.
   */
  name: string | undefined;
  /** Signs each request for the service: with its own secret, or with the gateway's key. */
  sign: Signer;
  /** How long one invocation may take before the gateway gives up on it. */
  timeoutMs?: number;
  /** Counts the invocations that found the service unreachable; while open, none is made. */
  breaker?: CircuitBreaker;
  /** Where the indexes its handlers read come from (resource/indexes.ts). */
  indexes?: IndexSource;
  /**
   * What the service may reach (dispatch/scope.ts), pinned by the gateway's operator: a manifest
   * that declares more is refused. `declared`: the manifest's own, for an operator in this process
   * (one trust domain). Undefined: unscoped, as a gateway run with --unscoped allows.
   */
  scope?: ServiceScope | 'declared';
  /** Holds what its answers ask to its scope and off the gateway's own state (dispatch/scope.ts). */
  guard?: AnswerGuard;
  /**
   * Set (--impersonate): its children and events are written as its ServiceAccount, the one its scope
   * names (`impersonate`), else one of its name in this namespace (its FunctionService's, or the gateway's).
   */
  impersonate?: string;
  /** Calls made together, sent in one request to a service that takes batches; each alone otherwise. */
  batches?: BatchLimits;
  /** Told of its requests and calls (the metrics'). */
  observer?: CallObserver;
  /** Told when it answered that it lacks handlers a call named: redeployed, its manifest is to be read again. */
  redeployed?: () => void;
  /** Its budgets (dispatch/budget.ts), shared by every instance of it; its transport holds it to them too. */
  budgets?: ServiceBudgets;
}

/**
 * How one call is made: `cut` aborts it; a `long` call (a daemon's) takes a connection beside the
 * service's capped ones; its patches may not set `othersResults` (keys of other services' results).
 */
export interface CallOptions {
  cut?: AbortSignal;
  long?: boolean;
  othersResults?: ReadonlySet<string>;
}

/** Told of the requests to function services and of the calls of their handlers (the metrics'). */
export interface CallObserver {
  /** One HTTP request to a service (a batch of calls is one): its status, undefined when no answer came. */
  requested(service: string, status: number | undefined, tookMs: number): void;
  /** The handlers of one call, each with its outcome, or all `failed` when the call failed. */
  called(
    service: string,
    cause: string,
    outcomes: Readonly<Record<string, Outcome['status'] | 'failed'>>,
    tookMs: number,
  ): void;
}

/** The gateway's indexes, as the calls of the handlers that read them need them. */
export interface IndexSource {
  /** The named indexes of a service, once each is complete (after a start, every object indexed). */
  contents(service: string, ids: readonly string[]): Promise<Record<string, IndexContents>>;
}

/**
 * The service could not be asked or did not answer usably; the handlers are retried later, or after
 * `retryAfterMs` when the service said when (`Retry-After` on a 429 or a 503).
 */
export class ServiceError extends Error {
  override name = 'ServiceError';
  readonly retryAfterMs: number | undefined;
  /** Not reached at all, or its proxy said it was not there (502, 503, 504): what the breaker counts. */
  readonly unreachable: boolean;
  /** The HTTP status it answered with; undefined when no answer came. */
  readonly status: number | undefined;
  /**
   * What went wrong in the gateway's words alone, without what the service said: for a status that
   * whoever may set the service's URL reads (the URL might reach what they may not read).
   */
  readonly reason: string;
  /** The handlers the call named that the service said it does not have (redeployed without them). */
  readonly missingHandlers: readonly string[] | undefined;

  constructor(
    message: string,
    options: {
      retryAfterMs?: number | undefined;
      unreachable?: boolean;
      reason?: string;
      status?: number;
      missingHandlers?: readonly string[] | undefined;
    } = {},
  ) {
    super(message);
    this.retryAfterMs = options.retryAfterMs;
    this.unreachable = options.unreachable ?? false;
    this.status = options.status;
    this.reason = options.reason ?? message;
    this.missingHandlers = options.missingHandlers;
  }
}

/**
 * The service is down (its circuit is open): no call was made, or the call found it unreachable as
 * its circuit opened (`made`); `recovered` resolves when it is back.
 */
export class ServiceDown extends ServiceError {
  override name = 'ServiceDown';
  readonly recovered: Promise<void>;
  readonly made: boolean;

  constructor(message: string, recovered: Promise<void>, made = false) {
    super(message, { unreachable: true });
    this.recovered = recovered;
    this.made = made;
  }
}

/**
 * `Retry-After` as seconds or an HTTP date, in milliseconds from now, a year at most (the longest delay
 * of the protocol: a service's 1e300 has no date to wait until); undefined when unreadable.
 */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const seconds = Number(value);
  const ms = value.trim() !== '' && Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - now;
  return Number.isNaN(ms) ? undefined : Math.min(Math.max(0, ms), MAX_DELAY_SECONDS * 1000);
}

const DEFAULT_TIMEOUT_MS = 30_000;
const encoder = new TextEncoder();

export class FunctionService {
  readonly manifest: Manifest;
  readonly unknownKinds: string[];
  /** What it may reach; undefined when unscoped. */
  readonly scope: ServiceScope | undefined;
  /** Under --impersonate, the ServiceAccount its children and events are written as. */
  readonly account: ServiceAccountName | undefined;
  readonly timeoutMs: number;
  readonly #transport: Transport;
  readonly #sign: Signer;
  readonly #options: FunctionServiceOptions;
  /** The version of each index the service was last sent whole (by one of its replicas, at least). */
  readonly #keptIndexes = new Map<string, string>();
  /** Its calls made together, to a service over HTTP that takes batches. */
  readonly #batches: CallBatches | undefined;

  private constructor(
    transport: Transport,
    sign: Signer,
    options: FunctionServiceOptions,
    parsed: ReturnType<typeof parseManifest>,
  ) {
    this.#transport = transport;
    this.#sign = sign;
    this.#options = options;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.scope = options.scope === 'declared' ? parsed.manifest.scope : options.scope;
    const handlers = narrowedToScope(parsed.manifest.handlers, this.scope, options.guard?.ownNamespace);
    this.manifest = { ...parsed.manifest, handlers };
    this.account =
      options.impersonate === undefined
        ? undefined
        : serviceAccountOf(this.manifest.name, this.scope, options.impersonate);
    this.unknownKinds = parsed.unknownKinds;
    const limits = options.batches;
    if (parsed.manifest.batches && !transport.direct && limits && limits.calls > 1) {
      this.#batches = new CallBatches((calls, timeoutMs) => this.#postCalls(calls, timeoutMs), limits);
    }
  }

  get name(): string {
    return this.manifest.name;
  }

  get url(): string {
    return this.#transport.url;
  }

  /** An operator in this process, asked directly rather than over HTTP. */
  get inProcess(): boolean {
    return this.#transport.direct !== undefined;
  }

  /** Its budgets, when it is held to some: daemons take a connection of `daemons` for each call. */
  get budgets(): ServiceBudgets | undefined {
    return this.#options.budgets;
  }

  /** While its circuit is open, why: its calls are not made. */
  get down(): string | undefined {
    return this.#options.breaker?.down;
  }

  static async connect(options: FunctionServiceOptions): Promise<FunctionService> {
    const { transport, sign } = options;
    const direct = transport.direct;
    const health = direct ? parseHealth(direct.health()) : await readHealth(transport);
    if (options.name !== undefined && health.name !== options.name) {
      throw new ProtocolError(
        `${transport.url} answers as "${health.name}", not as "${options.name}", the name the gateway was given for it`,
      );
    }
    const parsed = parseManifest(
      direct
        ? direct.manifest()
        : await send(
            transport,
            { sign, audience: health.name },
            'GET',
            PATHS.manifest,
            undefined,
            DEFAULT_TIMEOUT_MS,
          ),
    );
    if (parsed.manifest.name !== health.name) {
      throw new ProtocolError(
        `${options.transport.url} calls itself "${health.name}" but its manifest says "${parsed.manifest.name}"`,
      );
    }
    const { scope } = options;
    const declared = parsed.manifest.scope;
    if (declared && scope && scope !== 'declared') {
      const beyond = beyondPin(declared, scope);
      if (beyond.length > 0) {
        throw new ScopeError(
          `"${health.name}" declares a scope beyond the one pinned for it: ${beyond.join('; ')}`,
        );
      }
    }
    return new FunctionService(transport, sign, options, parsed);
  }

  /**
   * Sends an invocation; waits `timeoutMs` at most (the service's call timeout unless given), or until
   * `cut` aborts. A `long` call (a daemon's) takes a connection beside the service's capped ones.
   */
  async invoke(
    given: InvocationRequest | ActivityInvocation,
    timeoutMs = this.timeoutMs,
    call: CallOptions = {},
  ): Promise<InvocationResponse> {
    const { invocation, indexes } = await this.#withIndexes(given, timeoutMs);
    const ids = invocation.handlers.map((handler) => handler.id);
    const { observer } = this.#options;
    if (!observer) return this.#invoke(invocation, indexes, ids, timeoutMs, call);
    const started = performance.now();
    let response: InvocationResponse;
    try {
      response = await this.#invoke(invocation, indexes, ids, timeoutMs, call);
    } catch (error) {
      // A service known to be down was not called.
      if (!(error instanceof ServiceDown) || error.made) {
        const failed = Object.fromEntries(ids.map((id) => [id, 'failed' as const]));
        observer.called(this.name, invocation.reason, failed, performance.now() - started);
      }
      throw error;
    }
    const outcomes = Object.fromEntries(
      Object.entries(response.outcomes).map(([id, outcome]) => [id, outcome.status]),
    );
    observer.called(this.name, invocation.reason, outcomes, performance.now() - started);
    return response;
  }

  async #invoke(
    invocation: InvocationRequest | ActivityInvocation,
    indexes: Record<string, IndexContents> | undefined,
    ids: string[],
    timeoutMs: number,
    call: CallOptions,
  ): Promise<InvocationResponse> {
    const admission = invocation.reason === 'admission';
    const exchange = (request: typeof invocation) =>
      this.#exchange(request, request.traceparent, timeoutMs, call, (direct, copy) => direct.invoke(copy));
    const batches = this.#batchesFor(invocation, call);
    let answer = batches
      ? await batches.add(
          { json: JSON.stringify(invocation), traceparent: invocation.traceparent },
          timeoutMs,
          `${invocation.reason} ${ids.join(' ')}`,
        )
      : await exchange(invocation);
    if (missingIndexes(answer, invocation.indexVersions)) {
      // It does not keep (any more) a version it was not sent: sent again, with every index whole.
      answer = await exchange({ ...invocation, indexes });
      const missing = missingIndexes(answer, invocation.indexVersions);
      if (missing) {
        throw new ProtocolError(
          `"${this.name}" answered that it does not have the indexes ${missing.join(', ')}, which it was sent whole`,
        );
      }
    }
    for (const [id, version] of Object.entries(invocation.indexVersions ?? {}))
      this.#keptIndexes.set(id, version);
    if (isActivityInvocation(invocation)) return parseActivityResponse(answer, ids);
    const response = parseInvocationResponse(answer, ids, admission);
    const { guard } = this.#options;
    return guard
      ? {
          ...response,
          outcomes: await confineOutcomes(
            response.outcomes,
            this.scope,
            guard,
            invocation.body,
            call.othersResults,
            this.account,
          ),
        }
      : response;
  }

  /**
   * Where a call may join a batch, if it may: to a service that takes them, about an object, and
   * carrying no index whole (one naming its indexes by version may: if the service misses one, it
   * says so for that call, which is sent again alone with them).
   */
  #batchesFor(
    invocation: InvocationRequest | ActivityInvocation,
    call: { cut?: AbortSignal; long?: boolean },
  ): CallBatches | undefined {
    const batchable =
      !call.long &&
      !call.cut &&
      !isActivityInvocation(invocation) &&
      invocation.stop === undefined &&
      invocation.indexes === undefined;
    return batchable ? this.#batches : undefined;
  }

  /** Calls made together: alone as they are, or more in one batch; their answers in order. */
  async #postCalls(calls: readonly EncodedCall[], timeoutMs: number): Promise<readonly unknown[]> {
    const [first] = calls as [EncodedCall];
    if (calls.length === 1)
      return [await this.#post(encoder.encode(first.json), first.traceparent, timeoutMs, {})];
    const json = `{"protocol":${JSON.stringify(PROTOCOL)},"batch":[${calls.map((one) => one.json).join(',')}]}`;
    return batchAnswers(
      await this.#post(encoder.encode(json), first.traceparent, timeoutMs, {}),
      calls.length,
    );
  }

  /** Sends several calls in one request (an index's objects), answered in order. */
  async invokeBatch(batch: InvocationRequest[], timeoutMs = this.timeoutMs): Promise<IndexBatchResponse> {
    const request: InvocationBatch = { protocol: PROTOCOL, batch };
    const answer = await this.#exchange(request, batch[0]?.traceparent, timeoutMs, {}, (direct, copy) =>
      direct.invokeBatch(copy),
    );
    return parseBatchResponse(
      answer,
      batch.map((call) => call.handlers.map((handler) => handler.id)),
    );
  }

  /**
   * The indexes the due handlers read, complete, added to the call; its deadline is counted from then,
   * as waiting for an index after a start may take a while. To a service that keeps indexes, only
   * those of a version it was not sent yet, and every index's version; `indexes` is then all of them,
   * in case it does not keep one after all (another replica, or a restart).
   */
  async #withIndexes<Call extends InvocationRequest | ActivityInvocation>(
    invocation: Call,
    timeoutMs: number,
  ): Promise<{ invocation: Call; indexes?: Record<string, IndexContents> }> {
    const { indexes } = this.#options;
    if (!indexes || ('stop' in invocation && invocation.stop !== undefined)) return { invocation };
    const specs = isActivityInvocation(invocation)
      ? (this.manifest.activities ?? [])
      : this.manifest.handlers;
    const due = new Set(invocation.handlers.map((handler) => handler.id));
    const ids = new Set(specs.flatMap((spec) => (due.has(spec.id) ? (spec.options?.indexes ?? []) : [])));
    if (ids.size === 0) return { invocation };
    const all = await indexes.contents(this.name, [...ids]);
    const deadline = new Date(Date.now() + timeoutMs).toISOString();
    if (this.#transport.direct || !this.manifest.indexVersions) {
      return { invocation: { ...invocation, indexes: all, deadline } };
    }
    const indexVersions: Record<string, string> = {};
    const sent: Record<string, IndexContents> = {};
    for (const [id, contents] of Object.entries(all)) {
      indexVersions[id] = versionOf(contents);
      if (this.#keptIndexes.get(id) !== indexVersions[id]) sent[id] = contents;
    }
    const withSent = Object.keys(sent).length > 0 ? { indexes: sent } : {};
    return { invocation: { ...invocation, ...withSent, indexVersions, deadline }, indexes: all };
  }

  /** One request and its JSON answer: directly to a service in this process, signed over HTTP otherwise. */
  async #exchange<Request>(
    request: Request,
    traceparent: string | undefined,
    timeoutMs: number,
    { cut, long }: { cut?: AbortSignal; long?: boolean },
    inProcess: (direct: InProcessCalls, copy: Request) => Promise<unknown>,
  ): Promise<unknown> {
    const { direct } = this.#transport;
    if (direct) {
      try {
        return await withDeadline(timeoutMs, cut, (signal) =>
          Promise.race([inProcess(direct, inProcessCopy(request)), aborted(signal)]),
        );
      } catch (error) {
        const missingHandlers = missingHandlersOf(error);
        if (missingHandlers) this.#options.redeployed?.();
        throw new ServiceError(`invoke ${this.url}: ${describe(error)}`, { missingHandlers });
      }
    }
    return this.#post(encoder.encode(encodeRequest(request)), traceparent, timeoutMs, { cut, long });
  }

  /** A request signed and sent over HTTP, and its JSON answer; its outcome tells the breaker. */
  async #post(
    body: Uint8Array,
    traceparent: string | undefined,
    timeoutMs: number,
    { cut, long }: { cut?: AbortSignal | undefined; long?: boolean | undefined },
  ): Promise<unknown> {
    const { breaker, observer } = this.#options;
    if (breaker?.down) throw new ServiceDown(`${this.name} at ${this.url} is down`, breaker.recovered());
    const started = performance.now();
    let answer: unknown;
    try {
      const signer = { sign: this.#sign, audience: this.name, inSession: this.manifest.sessions === true };
      answer = await send(
        this.#transport,
        signer,
        'POST',
        PATHS.invoke,
        body,
        timeoutMs,
        { ...(traceparent ? { traceparent } : {}) },
        { ...(cut ? { cut } : {}), ...(long ? { long } : {}) },
      );
    } catch (error) {
      if (error instanceof ServiceError && error.unreachable) breaker?.unreachable(error.reason);
      else breaker?.succeeded();
      if (error instanceof ServiceError && error.missingHandlers) this.#options.redeployed?.();
      const status = error instanceof ServiceError ? error.status : undefined;
      observer?.requested(this.name, status, performance.now() - started);
      // Failed as the circuit opened (the calls in flight then, or the one that opened it): its
      // object waits for the service as those not called do, rather than each writing a failure.
      if (breaker?.down && error instanceof ServiceError && error.unreachable) {
        throw new ServiceDown(error.message, breaker.recovered(), true);
      }
      throw error;
    }
    breaker?.succeeded();
    observer?.requested(this.name, 200, performance.now() - started);
    return answer;
  }

  /** The same service asked again (its transport kept): a new instance when its manifest changed. */
  async reread(): Promise<FunctionService> {
    const next = await FunctionService.connect(this.#options);
    return equal(next.manifest, this.manifest) ? this : next;
  }

  /** Closes its way once the calls under way are done: the breaker's probes stop too. */
  close(): Promise<void> {
    this.#options.breaker?.close();
    return this.#transport.close();
  }
}

/** The service's health check, unsigned: its health document once it answers 200 with one. */
export async function readHealth(transport: Transport): Promise<Health> {
  return parseHealth(await send(transport, undefined, 'GET', PATHS.health, undefined, DEFAULT_TIMEOUT_MS));
}

/** Signs for `signer.audience` (unsigned without a signer), sends, and returns the parsed 200 answer. */
async function send(
  transport: Transport,
  signer: { sign: Signer; audience: string; inSession?: boolean } | undefined,
  method: 'GET' | 'POST',
  path: string,
  body: Uint8Array | undefined,
  timeoutMs: number,
  extraHeaders: Record<string, string> = {},
  call: Pick<Exchange, 'cut' | 'long'> = {},
): Promise<unknown> {
  const where = `${method} ${transport.url}${path}`;
  const headers: Record<string, string> = { accept: 'application/json', ...extraHeaders };
  if (method === 'POST') headers['content-type'] = 'application/json';
  if (signer) {
    const signed = { audience: signer.audience, method, path, body: body ?? new Uint8Array() };
    Object.assign(headers, signer.sign(signed, signer.inSession));
  }
  let answer: Reply;
  try {
    answer = await transport.send({
      method,
      path,
      headers,
      body: method === 'POST' ? body : undefined,
      timeoutMs,
      ...call,
    });
  } catch (error) {
    // Cut off by the gateway itself (a daemon that did not stop in time): no sign of the service's health.
    if (call.cut?.aborted) throw new ServiceError(`${where}: cut off (${call.cut.reason})`);
    // Its own replies in flight held its whole budget, each waiting for more: this one gave way.
    if (error instanceof BudgetStalled) {
      throw new ServiceError(
        `${where}: the replies of ${signer ? `service "${signer.audience}"` : transport.url} in flight held ` +
          'its whole budget of reply bytes (calls.replyBytesPerService), each waiting for more; this one gave way',
      );
    }
    // It answered: no sign of its health either.
    if (error instanceof ReplyTooLarge) {
      const service = signer ? `service "${signer.audience}"` : transport.url;
      throw new ServiceError(
        `${where}: the reply of ${service} is ${error.message}, the most the gateway reads (calls.maxReplyBytes); the rest was not read`,
      );
    }
    const timedOut = error instanceof Error && error.name === 'TimeoutError';
    throw new ServiceError(`${where}: ${timedOut ? `no answer within ${timeoutMs} ms` : describe(error)}`, {
      unreachable: true,
    });
  }
  try {
    return answered(answer, where);
  } finally {
    answer.release();
  }
}

/** The parsed 200 answer, or why there is none. */
function answered(answer: Reply, where: string): unknown {
  // A proxy's or load balancer's word that nothing is there, whatever its body.
  const unreachable = answer.status === 502 || answer.status === 503 || answer.status === 504;
  // The body is never quoted but as the protocol's own error message: the URL may reach anything.
  const bytes = `${Buffer.byteLength(answer.text)} bytes`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.text);
  } catch {
    throw new ServiceError(`${where}: answered ${answer.status} with a body that is not JSON (${bytes})`, {
      unreachable,
      status: answer.status,
    });
  }
  if (answer.status !== 200) {
    const message = (parsed as { error?: unknown })?.error;
    const later =
      answer.status === 429 || answer.status === 503 ? retryAfterMs(answer.retryAfter) : undefined;
    const said = typeof message === 'string' ? ", its error message in the gateway's log" : '';
    const reason = `${where}: answered ${answer.status} (${bytes}${said})`;
    throw new ServiceError(
      typeof message === 'string' ? `${where}: ${answer.status} ${message.slice(0, 200)}` : reason,
      {
        retryAfterMs: later,
        unreachable,
        reason,
        status: answer.status,
        missingHandlers: answer.status === 400 ? missingHandlersOf(parsed) : undefined,
      },
    );
  }
  return parsed;
}

/**
 * The handlers an answer (a 400's body, or what a service in this process threw) says the service
 * lacks: a list of strings, or none. Only the ids a call named count (dispatch/calls.ts).
 */
function missingHandlersOf(said: unknown): readonly string[] | undefined {
  const ids = isObject(said) ? said.missingHandlers : undefined;
  return ERROR_RESPONSE.missingHandlers.test(ids) ? (ids as string[]) : undefined;
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as { code?: string; message?: string } | undefined;
  const said = cause?.code ?? cause?.message ?? error.message;
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|certificate/i.test(`${said} ${(error as { code?: string }).code}`)) {
    // Node's own hint (--use-system-ca) is about a CA installed on this machine: not the likely case.
    return (
      `${said.split(';')[0]}: its certificate is not one this gateway trusts for it (give the CA that signed ` +
      "it: --functions-ca, settings.calls.ca; a service given a certificate Secret is trusted with the gateway's own only)"
    );
  }
  return said;
}

/**
 * Each index's version: the identity of its frozen contents, which stay the same object until the
 * index changes, named with this process's own prefix, so that no other gateway's version is taken
 * for one of this one's.
 */
const indexVersions = new WeakMap<IndexContents, string>();
const VERSION_PREFIX = crypto.randomUUID();
let versionsMade = 0;

function versionOf(contents: IndexContents): string {
  let version = indexVersions.get(contents);
  if (version === undefined) {
    version = `${VERSION_PREFIX}.${++versionsMade}`;
    indexVersions.set(contents, version);
  }
  return version;
}

/**
 * The indexes a service's answer says it misses (a MissingIndexes), each one the call named; undefined
 * for any other answer.
 */
function missingIndexes(answer: unknown, named: Record<string, string> | undefined): string[] | undefined {
  if (!isObject(answer) || !('missingIndexes' in answer)) return undefined;
  const missing = answer.missingIndexes;
  if (
    !Array.isArray(missing) ||
    missing.length === 0 ||
    !missing.every((id) => Object.hasOwn(named ?? {}, id))
  ) {
    throw new ProtocolError('missingIndexes must list indexes the call named by version');
  }
  return missing as string[];
}

/** A request with the indexes its handlers read: their contents, frozen, shared until they change. */
type WithIndexes = { indexes: Record<string, IndexContents> };

function hasIndexes(request: unknown): request is WithIndexes {
  return isObject(request) && isObject(request.indexes);
}

/**
 * What a service in this process is given: a copy, as the wire would make one (the service freezes
 * what it is given, and the gateway keeps the object), but for the indexes, already frozen: copying an
 * index of 10,000 names cost more than the call that reads it.
 */
function inProcessCopy<Request>(request: Request): Request {
  if (!hasIndexes(request)) return jsonCopy(request);
  const { indexes, ...rest } = request;
  return { ...jsonCopy(rest), indexes } as Request;
}

const encodedContents = new WeakMap<IndexContents, string>();

/** The request as JSON, each index's contents encoded once until it changes, not once per call. */
function encodeRequest(request: unknown): string {
  if (!hasIndexes(request)) return JSON.stringify(request);
  const { indexes, ...rest } = request;
  const members = Object.entries(indexes).map(([id, contents]) => {
    let json = encodedContents.get(contents);
    if (json === undefined) {
      json = JSON.stringify(contents);
      encodedContents.set(contents, json);
    }
    return `${JSON.stringify(id)}:${json}`;
  });
  const json = JSON.stringify(rest);
  const separator = json === '{}' ? '' : ',';
  return `${json.slice(0, -1)}${separator}"indexes":{${members.join(',')}}}`;
}
