/** Runs the CLI as users do, as a child process, and reads what it prints; finds free ports for servers to come. */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';

const ROOT = new URL('../..', import.meta.url).pathname;

export interface CliProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the first match of `pattern` in what the process printed, or fails when it exits first. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code (or the signal that ended it) once the process ends by itself. */
  exited(): Promise<number | NodeJS.Signals | null>;
  /** Sends `signal` and resolves with the exit code, or the signal that ended the process. */
  stop(signal?: NodeJS.Signals): Promise<number | NodeJS.Signals | null>;
}

/**
 * Starts `command` in a process group of its own and signals the whole group, as a terminal's Ctrl+C
 * does: wrappers such as `npm start` do not pass signals on to the program they run.
 */
export function startCli(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string = ROOT,
): CliProcess {
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  const listeners = new Set<() => void>();
  const append = (chunk: Buffer) => {
    output += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  // 'close' waits for every process that shares the output pipes (the program behind `npm start` too).
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) =>
    child.once('close', (code, signal) => resolve(code ?? signal)),
  );
  return {
    child,
    output: () => output,
    waitFor(pattern, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(output);
          if (match) finish(() => resolve(match));
        };
        const timer = setTimeout(
          () => finish(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${output}`))),
          timeoutMs,
        );
        const finish = (settle: () => void) => {
          clearTimeout(timer);
          listeners.delete(check);
          settle();
        };
        listeners.add(check);
        void exited.then((code) =>
          finish(() => reject(new Error(`exited (${code}) before printing ${pattern}:\n${output}`))),
        );
        check();
      });
    },
    exited: () => exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null && child.pid) {
        try {
          process.kill(-child.pid, signal);
        } catch {
          // the group is gone already
        }
      }
      return exited;
    },
  };
}

/**
 * The causeway command as the package installs it: the CLI bundled from this checkout's sources, which
 * the global setup's `npm pack` builds (its prepack). It starts on about a third of the CPU the
 * unbundled sources take (0.5-0.7 against 1.7 CPU seconds for `causeway crd`), and the tests start it
 * hundreds of times.
 */
export const CAUSEWAY_CLI = `${ROOT}dist/cli/causeway.mjs`;

/** The causeway command (CAUSEWAY_CLI), on the Node that runs the tests. */
export function causeway(args: string[], env: NodeJS.ProcessEnv): CliProcess {
  return startCli(process.execPath, [CAUSEWAY_CLI, ...args], env);
}

/**
 * `causeway serve <module>` on a free loopback port with more `args`, as users start a function
 * service, stopped after `t`; with the URL it says it listens on.
 */
export async function serveOnLoopback(
  t: TestContext,
  module: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ service: CliProcess; url: string }> {
  const service = causeway(['serve', module, '--port', '0', '--host', '127.0.0.1', ...args], env);
  t.after(() => service.stop());
  return { service, url: (await service.waitFor(/listening on (http:\/\/\S+)/))[1] as string };
}

/** A port free on this host now, for a server that must be named before it starts (the OS may hand it out again meanwhile, rarely). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  await new Promise((closed) => server.close(closed));
  return port;
}
