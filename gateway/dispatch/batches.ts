/**
 * Calls to one function service made in the same turn of the event loop, sent together in one request
 * (an InvocationBatch) to a service that declares it takes them: one signature, one verification, one
 * exchange and one JSON document for the calls a backlog or a burst of changes makes at once. Each call
 * is still answered, checked, failed and retried on its own; none waits for a later turn.
 *
 * A batch is answered when its slowest call is: only calls of the same handlers go together (a
 * backlog's creations, say), so that a quick handler's call never waits on another handler's.
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
  /** By what the calls are alike in: their handlers, and their timeout (a batch has one deadline). */
  readonly #waiting = new Map<string, { timeoutMs: number; calls: Waiting[] }>();

  constructor(send: SendCalls, limits: BatchLimits) {
    this.#send = send;
    this.#limits = limits;
  }

  /**
   * The call's answer, once the batch it joins (at the end of this turn) is answered. `handlers`: what
   * it calls (the reason and the handlers' ids, say); only calls of the same go together.
   */
  add(call: EncodedCall, timeoutMs: number, handlers: string): Promise<unknown> {
    return new Promise((resolve, reject) => {
      // After the I/O callbacks of this turn: the cycles that a page of watch events or a service's
      // batch of answers set going make their calls before it.
      if (this.#waiting.size === 0) setImmediate(() => this.#flush());
      const key = `${timeoutMs} ${handlers}`;
      const group = this.#waiting.get(key);
      if (group) group.calls.push({ ...call, resolve, reject });
      else this.#waiting.set(key, { timeoutMs, calls: [{ ...call, resolve, reject }] });
    });
  }

  #flush(): void {
    const groups = [...this.#waiting.values()];
    this.#waiting.clear();
    for (const { timeoutMs, calls } of groups) {
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
