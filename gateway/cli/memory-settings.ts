/**
 * The memory settings the `causeway` command runs with, however it is started (npx, the image,
 * `node causeway.mjs`): over 10,000 objects they keep the peak RSS near what the gateway holds
 * (docs/benchmarks.md, "Memory settings").
 *
 * - `--max-semi-space-size=4`: a young generation of two 4 MiB semi-spaces instead of up to two of 32
 *   (Node 24's default).
 * - `--heap-growing-percent=50`: V8 grows the old generation by half its live size after a full
 *   collection instead of up to four times, so the heap follows what the gateway holds, with no cap to
 *   run out of.
 * - `MALLOC_ARENA_MAX=2`: glibc's malloc gives each allocating thread an arena of its own (up to eight
 *   per core) and keeps what an arena once held.
 *
 * Two of them cannot be changed in a running process: V8 sizes the young generation when it starts (a
 * later `v8.setFlagsFromString` leaves it as it is, though it does change the heap's growing), and
 * glibc reads its variable once. The heap's growing alone left the peak at 262 MiB, all three at 134
 * (of 326 with none). So the launcher replaces its process with one started with them (launch.ts), at
 * the cost of a second start of Node and no memory.
 */
export const MEMORY_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4', '--heap-growing-percent=50'];
export const MEMORY_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };

/** `CAUSEWAY_MEMORY_SETTINGS=off`: run with Node's and glibc's defaults (or whatever else the user set). */
const MEMORY_SETTINGS_VARIABLE = 'CAUSEWAY_MEMORY_SETTINGS';

/** The flags and variables a process started with `execArgv` and `env` still needs. */
export interface MissingSettings {
  flags: string[];
  env: Record<string, string>;
}

/**
 * What is missing of the memory settings, or undefined when nothing is (so the process goes on as it
 * is): a setting the user chose, in the command line, NODE_OPTIONS or the environment, whatever its
 * value, is theirs; `CAUSEWAY_MEMORY_SETTINGS=off` leaves them all out. A process started with what
 * this returns needs nothing more.
 */
export function missingMemorySettings(
  execArgv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): MissingSettings | undefined {
  if (env[MEMORY_SETTINGS_VARIABLE] === 'off') return undefined;
  const chosen = new Set([...execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/)].map(flagName));
  const flags = MEMORY_NODE_FLAGS.filter((flag) => !chosen.has(flagName(flag)));
  const missingEnv = Object.fromEntries(
    Object.entries(MEMORY_ENV).filter(([name]) => env[name] === undefined),
  );
  return flags.length === 0 && Object.keys(missingEnv).length === 0 ? undefined : { flags, env: missingEnv };
}

/** `--max_semi_space_size=8` → `--max-semi-space-size`: V8 takes a flag's name with either. */
function flagName(argument: string): string {
  return (argument.split('=')[0] as string).replaceAll('_', '-');
}
