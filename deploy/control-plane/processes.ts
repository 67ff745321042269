import { spawn } from 'node:child_process';
import { open, readFile } from 'node:fs/promises';

/**
 * The command runs under this sh supervisor. stop() TERMs the supervisor's process group (it is the
 * group leader, see `detached` below); the supervisor ignores TERM, outlives the command, and exits
 * with its status, so Node also learns when a component crashes on its own.
 *
 * The supervisor's stdin is a pipe of which only Node holds the write end, so it closes when Node dies
 * in any way, SIGKILL included: the watcher then does what stop() would have done, TERM to the group
 * and KILL after the grace period.
 *
 * The command starts before `trap '' TERM` because ignored signals are inherited. Only then does the
 * supervisor say the command's pid on fd 3, so a stop() can never reach it before its trap is set. The watcher
 * reads fd 4 because sh points a background job's stdin at /dev/null. It polls rather than sleeping the whole
 * grace so that after Node's death it outlives the command by at most 0.1 s. Its `wait`s send stderr
 * to /dev/null so that sh's job reports ("Terminated") stay out of the command's log.
 */
const SUPERVISOR = `
ticks=$1; shift
"$@" </dev/null 3>&- &
child=$!
trap '' TERM
echo "$child" >&3
exec 3>&-
exec 4<&0
{
  while read -r _; do :; done
  kill -TERM 0
  n=0
  while kill -0 "$child" 2>/dev/null; do
    n=$((n + 1))
    if [ "$n" -gt "$ticks" ]; then kill -KILL 0; fi
    sleep 0.1
  done
} <&4 &
watcher=$!
wait "$child" 2>/dev/null
status=$?
kill -KILL "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
exit "$status"
`;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Supervised {
  readonly name: string;
  /** The supervisor's pid, which is also the process group of everything it started. */
  readonly pid: number;
  readonly logPath: string;
  readonly exited: Promise<Exit>;
  /** Set once the supervisor has exited. */
  readonly exit: Exit | undefined;
  /** Idempotent; resolves when the command and its supervisor are gone. */
  stop(): Promise<Exit>;
  /**
   * Sends `signal` to the command, with no grace (a crash, as `kill -9` makes one); resolves when the
   * supervisor has exited, which it does once it has reaped the command: its ports are free then, for
   * a restart on them. (Killing the supervisor too would let it end first, the ports still held.)
   */
  kill(signal: NodeJS.Signals): Promise<Exit>;
}

/** Lets the caller take charge of stopping a component before it is ready. */
export type OnSpawn = (component: Supervised) => void;

export interface SuperviseOptions {
  /** Receives stderr, and stdout unless `stdoutPath` is given. */
  logPath: string;
  stdoutPath?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  graceSeconds?: number;
}

export async function supervise(
  name: string,
  command: string,
  args: readonly string[],
  { logPath, stdoutPath, cwd, env, graceSeconds = 10 }: SuperviseOptions,
): Promise<Supervised> {
  const log = await open(logPath, 'a');
  const out = stdoutPath ? await open(stdoutPath, 'w') : log;
  const ticks = String(Math.ceil(graceSeconds * 10));
  const child = spawn('sh', ['-c', SUPERVISOR, `causeway-supervise-${name}`, ticks, command, ...args], {
    cwd,
    env,
    // A process group of its own: group-wide signals must not reach Node, and a Ctrl-C in the
    // terminal must reach only Node, which then stops components in order.
    detached: true,
    stdio: ['pipe', out.fd, log.fd, 'pipe'],
  });
  // Listened for from the spawn on: a command that exits before it is reported ready, or while the
  // files close, must still be seen to exit.
  let exit: Exit | undefined;
  let commandPid: number;
  const exited = new Promise<Exit>((resolve) =>
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      resolve(exit);
    }),
  );
  try {
    commandPid = await new Promise<number>((resolve, reject) => {
      child.stdio[3]?.once('data', (data: Buffer) => resolve(Number(String(data).trim())));
      child.once('error', reject);
      void exited.then(({ code, signal }) =>
        reject(new Error(`${name}: the supervisor exited (${code ?? signal})`)),
      );
    });
  } finally {
    await log.close();
    if (out !== log) await out.close();
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${name}: sh started without a pid`);

  let stopping: Promise<Exit> | undefined;
  return {
    name,
    pid,
    logPath,
    exited,
    get exit() {
      return exit;
    },
    stop() {
      stopping ??= (async () => {
        signalGroup(pid, 'SIGTERM');
        const escalation = setTimeout(() => signalGroup(pid, 'SIGKILL'), graceSeconds * 1000);
        try {
          return await exited;
        } finally {
          clearTimeout(escalation);
          // Anything still in the group is a descendant of the command that ignored SIGTERM.
          signalGroup(pid, 'SIGKILL');
          child.stdin?.destroy();
        }
      })();
      return stopping;
    },
    async kill(signal) {
      try {
        process.kill(commandPid, signal);
      } catch {
        // Already gone: the supervisor exits, or has.
      }
      const ended = await exited;
      // Whatever the command started, and the supervisor's watcher, go with it.
      signalGroup(pid, 'SIGKILL');
      child.stdin?.destroy();
      return ended;
    },
  };
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function describeExit({ code, signal }: Exit): string {
  return signal ? `killed by ${signal}` : `exit code ${code}`;
}

export async function logTail(path: string, lines = 25): Promise<string> {
  const text = await readFile(path, 'utf8').catch(() => '');
  const tail = text.trimEnd().split('\n').slice(-lines).join('\n');
  return `--- last lines of ${path} ---\n${tail}`;
}
