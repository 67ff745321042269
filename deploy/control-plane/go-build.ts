import { appendFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describeExit, logTail, supervise } from './processes.ts';
import type { Progress } from './progress.ts';

export interface GoProgram {
  /** File name of the built binary. */
  binary: string;
  /** Import path of its main package. */
  package: string;
}

/** A published module whose main packages are built through a throwaway wrapper module. */
export interface GoMainModule {
  /** Names the wrapper module, causeway.local/<name>. */
  name: string;
  path: string;
  version: string;
  /**
   * Requirements the module pins at v0.0.0 because it develops them in-tree (Kubernetes' staging
   * modules) are published separately at this version.
   */
  stagingVersion?: string;
  programs: GoProgram[];
  tags?: string[];
  ldflags: string[];
  /**
   * Builds with another module's requirements (but for `except`) and its build tags, which with the
   * versions are what Go's build cache keys a package by: the packages both import then compile once,
   * for whichever of the two is built first.
   */
  sharesBuildOf?: { module: GoMainModule; except: string[] };
}

function goEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CGO_ENABLED: '0',
    // A toolchain download would be a surprise network fetch on a machine that has a recent enough Go.
    GOTOOLCHAIN: 'local',
    GOFLAGS: '-buildvcs=false',
    GOWORK: 'off',
  };
}

/** Builds `programs` of `module` into `<workDir>/bin`. */
export async function buildGoPrograms(
  module: GoMainModule,
  programs: GoProgram[],
  { workDir, logPath, onProgress }: { workDir: string; logPath: string; onProgress: Progress },
): Promise<string> {
  const moduleDir = join(workDir, module.name);
  const binDir = join(workDir, 'bin');
  await mkdir(moduleDir, { recursive: true });
  const go = (step: string, args: string[], stdoutPath?: string) =>
    runGo(step, args, { cwd: moduleDir, logPath, stdoutPath, onProgress });

  const goModOf = async (of: GoMainModule) => {
    const infoPath = join(workDir, `${of.name}.download.json`);
    await go(
      `downloading ${of.path} ${of.version}`,
      ['mod', 'download', '-json', `${of.path}@${of.version}`],
      infoPath,
    );
    const { GoMod } = JSON.parse(await readFile(infoPath, 'utf8')) as { GoMod: string };
    return readFile(GoMod, 'utf8');
  };
  const shared = module.sharesBuildOf;
  const pins = shared ? sharedVersions(shared, await goModOf(shared.module)) : [];
  await writeFile(join(moduleDir, 'go.mod'), wrapperGoMod(module, await goModOf(module), pins));

  const packages = programs.map((program) => `${program.package}@${module.version}`);
  await go(`resolving the dependencies of ${module.path}`, ['get', ...packages]);
  const tags = shared ? shared.module.tags : module.tags;
  // One `go build` for all the programs, so that Go compiles their packages in one schedule and links
  // one while it compiles for another. No DWARF: `-w` strips it from the binaries anyway, and not
  // generating it saves a seventh of the compilers' time (measured on etcd: 154 to 132 CPU-s). The
  // flags are part of the build cache's key, so a module that shares this build has the same.
  const stagingDir = join(workDir, 'built');
  await go(`compiling ${programs.map((program) => program.binary).join(' and ')} ${module.version}`, [
    'build',
    ...(tags ? ['-tags', tags.join(',')] : []),
    '-gcflags=all=-dwarf=false',
    '-ldflags',
    module.ldflags.join(' '),
    '-o',
    `${stagingDir}/`,
    ...programs.map((program) => program.package),
  ]);
  await mkdir(binDir, { recursive: true });
  for (const program of programs) {
    await rename(join(stagingDir, executableName(program.package)), join(binDir, program.binary));
  }
  return binDir;
}

/**
 * Builds the main package at the root of `moduleDir`, a module of its own (its go.mod and go.sum, not a
 * published one), into `<workDir>/<binary>` with a plain `go build`, as its users build it.
 */
export async function buildGoModule(
  moduleDir: string,
  binary: string,
  { workDir, logPath, onProgress }: { workDir: string; logPath: string; onProgress: Progress },
): Promise<string> {
  const built = join(workDir, binary);
  await runGo(`compiling ${binary}`, ['build', '-o', built, '.'], {
    cwd: moduleDir,
    logPath,
    onProgress,
    missingGo: `Go must be on PATH to build ${moduleDir}.`,
  });
  return built;
}

/**
 * The name `go build -o DIR/` gives a main package's executable: its path's last element, or the one
 * before a major version suffix (go.etcd.io/etcd/server/v3 makes `server`).
 */
export function executableName(packagePath: string): string {
  const elements = packagePath.split('/');
  const last = elements.at(-1) ?? packagePath;
  return /^v[2-9]\d*$/.test(last) && elements.length > 1 ? (elements.at(-2) as string) : last;
}

/** A module path and the version a `replace` directive fixes it at. */
export interface Pin {
  path: string;
  version: string;
}

/** The `require` lines of a go.mod, direct and indirect. */
export function requirements(goMod: string): Pin[] {
  const blocks = [...goMod.matchAll(/^require\s*\(\n([\s\S]*?)^\)/gm)].flatMap((m) =>
    (m[1] ?? '').split('\n'),
  );
  const singles = [...goMod.matchAll(/^require[ \t]+([^\s(].*)$/gm)].map((m) => m[1] ?? '');
  return [...blocks, ...singles].flatMap((line) => {
    const [path, version] = line.trim().split(/\s+/);
    return path && version && !path.startsWith('//') ? [{ path, version }] : [];
  });
}

/** The versions `shared.module` requires, as pins. */
export function sharedVersions(shared: { module: GoMainModule; except: string[] }, goMod: string): Pin[] {
  return requirements(goMod)
    .filter(({ path }) => !shared.except.includes(path))
    .map(({ path, version }) => ({
      path,
      version: version === IN_TREE ? publishedVersion(shared.module, path) : version,
    }));
}

/** What a module requires its in-tree modules (Kubernetes' staging ones) at. */
const IN_TREE = 'v0.0.0';

function publishedVersion(module: GoMainModule, path: string): string {
  if (!module.stagingVersion)
    throw new Error(`${module.path}@${module.version} requires ${path} at ${IN_TREE}`);
  return module.stagingVersion;
}

/**
 * The wrapper takes over the main module's `go` and `godebug` lines, because those set the language and
 * runtime defaults the code was written for and a dependency's own lines are ignored. `pins` replace
 * the versions the module's own requirements would select.
 */
export function wrapperGoMod(module: GoMainModule, upstream: string, pins: Pin[] = []): string {
  const goVersion = /^go\s+(\S+)/m.exec(upstream)?.[1];
  if (!goVersion) throw new Error(`${module.path}@${module.version}: go.mod has no go directive`);
  const godebug = [
    ...[...upstream.matchAll(/^godebug\s+([^(\s].*)$/gm)].map((m) => m[1]),
    ...[...upstream.matchAll(/^godebug\s*\(\n([\s\S]*?)^\)/gm)].flatMap((m) =>
      (m[1] ?? '').split('\n').map((line) => line.trim()),
    ),
  ].filter((line) => line && !line.startsWith('//'));
  const replaced = new Map(
    requirements(upstream)
      .filter(({ version }) => version === IN_TREE)
      .map(({ path }) => [path, publishedVersion(module, path)]),
  );
  for (const { path, version } of pins) if (path !== module.path) replaced.set(path, version);
  return [
    `module causeway.local/${module.name}`,
    '',
    `go ${goVersion}`,
    ...godebug.map((line) => `godebug ${line}`),
    '',
    `require ${module.path} ${module.version}`,
    ...(replaced.size > 0
      ? ['', 'replace (', ...[...replaced].map(([path, version]) => `\t${path} => ${path} ${version}`), ')']
      : []),
    '',
  ].join('\n');
}

const HEARTBEAT_MS = 30_000;

/** What to do when there is no `go` to run, unless the caller knows better. */
const CONTROL_PLANE_NEEDS_GO =
  'Go 1.24 or newer must be on PATH to build the control plane (or set CAUSEWAY_ETCD, ' +
  'CAUSEWAY_KUBE_APISERVER and CAUSEWAY_KUBE_CONTROLLER_MANAGER to existing binaries).';

async function runGo(
  step: string,
  args: string[],
  options: { cwd: string; logPath: string; stdoutPath?: string; onProgress: Progress; missingGo?: string },
): Promise<void> {
  const { logPath, onProgress, missingGo = CONTROL_PLANE_NEEDS_GO, ...spawnOptions } = options;
  onProgress(`${step}…`);
  await appendFile(logPath, `\n$ go ${args.map((arg) => (/\s/.test(arg) ? `'${arg}'` : arg)).join(' ')}\n`);
  const started = performance.now();
  const heartbeat = setInterval(
    () => onProgress(`still ${step} (${Math.round((performance.now() - started) / 1000)} s)…`),
    HEARTBEAT_MS,
  );
  try {
    const proc = await supervise('go', 'go', args, {
      ...spawnOptions,
      logPath,
      env: goEnv(),
      graceSeconds: 5,
    });
    const exit = await proc.exited;
    if (exit.code === 0) return;
    const hint = exit.code === 127 ? `\n${missingGo}` : '';
    throw new Error(
      `go ${args[0]} failed while ${step} (${describeExit(exit)})${hint}\n${await logTail(logPath)}`,
    );
  } finally {
    clearInterval(heartbeat);
  }
}
