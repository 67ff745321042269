/**
 * A user's own project, outside the repository, with Causeway installed from the tarball `npm pack`
 * makes: what users get, not the sources the rest of the tests run.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const REPO = new URL('../..', import.meta.url).pathname.replace(/\/$/, '');
const run = promisify(execFile);

/** Packs the repository as npm publishes it (prepack builds dist/); returns the tarball's path. */
export async function packPackage(destination: string): Promise<string> {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', destination], {
    cwd: REPO,
    env: userEnvironment(),
  });
  const [packed] = JSON.parse(stdout) as Array<{ filename: string }>;
  if (!packed) throw new Error(`npm pack said nothing of a tarball:\n${stdout}`);
  return join(destination, packed.filename);
}

/** The tarball test/setup.ts packed for this run. */
export function packedTarball(): string {
  const tarball = process.env.CAUSEWAY_TEST_TARBALL;
  if (!tarball)
    throw new Error(
      'CAUSEWAY_TEST_TARBALL is not set: run node --test with --test-global-setup=test/setup.ts',
    );
  return tarball;
}

/**
 * Set by this run, not by a user: NODE_TEST_CONTEXT, for one, makes a user's `node --test` think it
 * runs inside this test runner and skip its files.
 */
const REPOSITORY_VARIABLES = ['NODE_OPTIONS', 'NODE_TEST_CONTEXT', 'INIT_CWD', 'CAUSEWAY_SECRET'];

/**
 * The environment of a user's shell: this run's Node first on PATH (the machine's may be older), and
 * nothing of the repository's: no npm_* variables from `npm test`, no hook (NODE_OPTIONS) that would
 * point `causeway/*` at sources, no node_modules/.bin of the repository.
 */
export function userEnvironment(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const inherited = Object.entries(process.env).filter(
    ([name]) => !name.startsWith('npm_') && !REPOSITORY_VARIABLES.includes(name),
  );
  const path = (process.env.PATH ?? '').split(':').filter((entry) => entry && !entry.startsWith(REPO));
  return { ...Object.fromEntries(inherited), PATH: [dirname(process.execPath), ...path].join(':'), ...extra };
}

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end in `cwd` with a user's environment; never throws for a non-zero exit. */
export async function runIn(
  cwd: string,
  command: string,
  args: string[],
  extra: NodeJS.ProcessEnv = {},
): Promise<CommandResult> {
  try {
    const { stdout, stderr } = await run(command, args, {
      cwd,
      env: userEnvironment(extra),
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/** Runs a command that must succeed, and says what it printed when it does not. */
export async function runOk(
  cwd: string,
  command: string,
  args: string[],
  extra?: NodeJS.ProcessEnv,
): Promise<string> {
  const result = await runIn(cwd, command, args, extra);
  if (result.code !== 0) {
    throw new Error(`${command} ${args.join(' ')} exited ${result.code}:\n${result.stdout}${result.stderr}`);
  }
  return result.stdout;
}

/** A fresh directory outside the repository; `remove` it when done. */
export async function projectDirectory(): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'causeway-user-'));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Makes `dir` an empty ES-module project and installs `packages` into it with `npm install` (from
 * npm's cache where it has them, else from the registry), at the versions of this repository's lock.
 */
export async function userProject(dir: string, packages: string[]): Promise<void> {
  await writeFile(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: 'a-user-project', version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`,
  );
  await npmInstall(dir, packages);
}

/**
 * Makes `dir` a project as `npm init -y` makes it, "type": "commonjs" (npm 11 writes it; an older npm
 * leaves it out, which Node takes as CommonJS too, but then looks for module syntax itself), and
 * installs `packages` into it as userProject does.
 */
export async function npmInitProject(dir: string, packages: string[]): Promise<void> {
  await runOk(dir, 'npm', ['init', '-y']);
  const manifestPath = join(dir, 'package.json');
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8'));
  await writeFile(manifestPath, `${JSON.stringify({ ...manifest, type: 'commonjs' }, null, 2)}\n`);
  await npmInstall(dir, packages);
}

/**
 * Installs into the project in `dir` with its package.json's `overrides` set to the versions of this
 * repository's lock, so that what the tests install is what the repository was tested with, not what
 * the registry published since within the same ranges.
 */
export async function npmInstall(dir: string, packages: string[] = []): Promise<string> {
  const manifestPath = join(dir, 'package.json');
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8'));
  // npm refuses an override of a direct dependency; those the project's own ranges choose.
  const direct = new Set(Object.keys({ ...manifest.dependencies, ...manifest.devDependencies }));
  const locked = Object.entries(await lockedVersions()).filter(([name]) => !direct.has(name));
  manifest.overrides = { ...Object.fromEntries(locked), ...manifest.overrides };
  await writeFile(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  return runOk(dir, 'npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...packages]);
}

/**
 * Each package the lock holds at one version only (an override applies to every copy, so a package
 * held at several versions is left to the ranges), with that version.
 */
export async function lockedVersions(): Promise<Record<string, string>> {
  const lock = JSON.parse(await readFile(join(REPO, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string; link?: boolean }>;
  };
  const versions = new Map<string, Set<string>>();
  for (const [path, entry] of Object.entries(lock.packages)) {
    const name = path.split('node_modules/').at(-1);
    if (!path || !name || !entry.version || entry.link) continue;
    versions.set(name, (versions.get(name) ?? new Set()).add(entry.version));
  }
  return Object.fromEntries(
    [...versions].flatMap(([name, each]) => (each.size === 1 ? [[name, [...each][0] as string]] : [])),
  );
}
