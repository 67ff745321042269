/**
 * Tasks run one at a time, in the order given: each starts once the one before has settled, whether it
 * resolved or rejected. What a task resolves or rejects is its caller's alone; the next ones run anyway.
 */
export class Serial {
  /** The last task given, settled one way or the other: the next starts after it. */
  #last: Promise<unknown> = Promise.resolve();
  #unsettled = 0;

  /** Whether a task runs or waits its turn. */
  get busy(): boolean {
    return this.#unsettled > 0;
  }

  /** Runs `task` once every task given before has settled. */
  run<T>(task: () => Promise<T>): Promise<T> {
    this.#unsettled++;
    const result = this.#last.then(task).finally(() => {
      this.#unsettled--;
    });
    this.#last = result.catch(() => {});
    return result;
  }

  /** Resolves once every task given so far has settled. */
  async idle(): Promise<void> {
    await this.#last;
  }
}
