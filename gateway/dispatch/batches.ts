/**
 * Calls to one function service made in the same turn of the event loop, sent together in one request
 * (an InvocationBatch) to a service that declares it takes them: one signature, one verification, one
 * exchange and one JSON document for the calls a backlog or a burst of changes makes at once. Each call
 * is still answered, checked, failed and retried on its own; none waits for a later turn.
 */

/** A batch's size at most: calls, and bytes of their JSON (a call beyond it goes alone). */
export interface BatchLimits {
  calls: number;
  bytes: number;
}

/** One call: its JSON, and the trace it belongs to. */
export interface EncodedCall {
  json: string;
  traceparent: string | undefined;
}

/** Sends one or more calls within `timeoutMs`; resolves with each one's answer, in order. */
export type SendCalls = (calls: readonly EncodedCall[], timeoutMs: number) => Promise<readonly unknown[]>;

interface Waiting extends EncodedCall {
  resolve(answer: unknown): void;
  reject(error: unknown): void;
}

export class CallBatches {
  readonly #send: SendCalls;
  readonly #limits: BatchLimits;
  /** By timeout: the calls of a batch share one deadline. */
  readonly #waiting = new Map<number, Waiting[]>();
  #flushing = false;

  constructor(send: SendCalls, limits: BatchLimits) {
    this.#send = send;
    this.#limits = limits;
  }

  /** The call's answer, once the batch it joins (at the end of this turn) is answered. */
  add(call: EncodedCall, timeoutMs: number): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const group = this.#waiting.get(timeoutMs);
      if (group) group.push({ ...call, resolve, reject });
      else this.#waiting.set(timeoutMs, [{ ...call, resolve, reject }]);
      if (this.#flushing) return;
      this.#flushing = true;
      // After the I/O callbacks of this turn: the cycles that a page of watch events or a service's
      // batch of answers set going make their calls before it.
      setImmediate(() => this.#flush());
    });
  }

  #flush(): void {
    this.#flushing = false;
    const groups = [...this.#waiting];
    this.#waiting.clear();
    for (const [timeoutMs, calls] of groups) {
      for (const batch of batched(calls, this.#limits)) void this.#sendBatch(batch, timeoutMs);
    }
  }

  async #sendBatch(batch: Waiting[], timeoutMs: number): Promise<void> {
    try {
      const answers = await this.#send(batch, timeoutMs);
      for (const [position, call] of batch.entries()) call.resolve(answers[position]);
    } catch (error) {
      for (const call of batch) call.reject(error);
    }
  }
}

/** The calls in order, cut into batches within the limits. */
export function batched<Call extends EncodedCall>(calls: readonly Call[], limits: BatchLimits): Call[][] {
  const batches: Call[][] = [];
  let current: Call[] = [];
  let bytes = 0;
  for (const call of calls) {
    const size = call.json.length;
    if (current.length > 0 && (current.length >= limits.calls || bytes + size > limits.bytes)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(call);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/**
 * How long each handler's calls took last time, round trip: a batch is answered when its slowest call
 * is, so only the calls of handlers known to be quick join one, and a slow handler's calls go alone
 * (a call in a batch with it would wait as long). Held per handler id of the service's manifest.
 */
export class HandlerPace {
  readonly #lastMs = new Map<string, number>();
  readonly #quickMs: number;

  constructor(quickMs = QUICK_MS) {
    this.#quickMs = quickMs;
  }

  /** Whether a call of these handlers may join a batch: each one's last call was quick. */
  quick(ids: readonly string[]): boolean {
    return ids.every((id) => (this.#lastMs.get(id) ?? Number.POSITIVE_INFINITY) < this.#quickMs);
  }

  took(ids: readonly string[], ms: number): void {
    for (const id of ids) this.#lastMs.set(id, ms);
  }
}

/**
 * A handler quicker than this joins batches: a call's way over HTTPS costs the gateway and the service
 * about half a millisecond each, which only matters beside handlers this quick.
 */
const QUICK_MS = 20;
