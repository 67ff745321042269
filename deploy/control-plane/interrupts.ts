const SIGNALS = ['SIGINT', 'SIGTERM'] as const;
const stops = new Set<() => Promise<void>>();

/**
 * Stops what is registered on SIGINT or SIGTERM. When nothing else listens for the signal, it is raised
 * again afterwards so that the process still ends the default way; when something does (the test runner,
 * an application's own handler), that listener decides.
 */
function onSignal(signal: NodeJS.Signals): void {
  void Promise.allSettled([...stops].map((stop) => stop())).then(() => {
    if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  });
}

/** Returns the function that unregisters `stop`. */
export function stopOnInterrupt(stop: () => Promise<void>): () => void {
  if (stops.size === 0) for (const signal of SIGNALS) process.on(signal, onSignal);
  stops.add(stop);
  return () => {
    stops.delete(stop);
    if (stops.size === 0) for (const signal of SIGNALS) process.off(signal, onSignal);
  };
}
