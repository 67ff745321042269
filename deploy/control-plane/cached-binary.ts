import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { withLock } from './lock.ts';
import { type Progress, seconds } from './progress.ts';

/** What cachedBinary builds, and how; `make` returns the path of the binary it built in `workDir`. */
export interface CachedBuild {
  /** Names it in progress lines, e.g. `helm`. */
  name: string;
  /** Where it is built from, e.g. `helm v3.19.5 from its Go module`. */
  from: string;
  make(dirs: { workDir: string; logPath: string }): Promise<string>;
  onProgress: Progress;
}

/**
 * `<root>/bin/<file>`, built on first use. One process builds at a time (a lock in `root`), in a
 * temporary directory, and publishes the binary by an atomic rename: a file in bin/ is complete.
 */
export async function cachedBinary(root: string, file: string, build: CachedBuild): Promise<string> {
  const binary = join(root, 'bin', file);
  if (await isExecutable(binary)) return binary;
  await mkdir(join(root, 'bin'), { recursive: true });
  const { name, onProgress } = build;
  const onWait = (pid: number) => onProgress(`waiting for another process (pid ${pid}) to build ${name}…`);
  await withLock(join(root, 'build.lock'), onWait, async () => {
    // Another process may have built it while this one waited.
    if (await isExecutable(binary)) return;
    const started = performance.now();
    const logPath = join(root, 'build.log');
    await writeFile(logPath, '');
    onProgress(`building ${build.from} (first run only; log: ${logPath})…`);
    const workDir = await mkdtemp(join(root, 'build-'));
    try {
      await rename(await build.make({ workDir, logPath }), binary);
    } finally {
      await rm(workDir, { recursive: true, force: true });
    }
    onProgress(`built ${name} in ${seconds(started)}`);
  });
  return binary;
}

/**
 * A short hash of the files under `dir`, their paths and contents: a cache keyed by it is built afresh
 * after any edit of the sources.
 */
export async function contentKey(dir: string): Promise<string> {
  const hash = createHash('sha256');
  const files = (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .sort();
  for (const file of files) {
    // Each length-prefixed, so that no two different trees hash the same bytes.
    const content = await readFile(join(dir, file));
    hash.update(`${Buffer.byteLength(file)}:${file}${content.length}:`).update(content);
  }
  return hash.digest('hex').slice(0, 16);
}

export async function isExecutable(path: string): Promise<boolean> {
  return access(path, constants.X_OK).then(
    () => true,
    () => false,
  );
}
