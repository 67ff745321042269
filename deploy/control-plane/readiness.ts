import { describeExit, logTail, type Supervised } from './processes.ts';
import { waitFor } from './wait.ts';

const READY_TIMEOUT_MS = 60_000;

/** Polls `probe` until the component is ready, failing early with its log when it exits instead. */
export async function untilReady<T>(
  component: Supervised,
  what: string,
  probe: () => Promise<T | undefined>,
  lastObservation: () => string = () => '',
): Promise<T> {
  return waitFor(
    what,
    async () => {
      if (component.exit) {
        throw new Error(
          `${component.name} exited (${describeExit(component.exit)}) before it was ready\n${await logTail(component.logPath)}`,
        );
      }
      return probe();
    },
    {
      timeoutMs: READY_TIMEOUT_MS,
      detail: async () => `${lastObservation()}\n${await logTail(component.logPath)}`.trimStart(),
    },
  );
}
