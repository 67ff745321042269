import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isAlive } from './processes.ts';

/**
 * Runs `fn` while holding a directory lock at `path`, so that two processes do not both spend minutes on
 * the same build. It is an optimisation, not a safety measure: builds write into private temporary
 * directories and publish by atomic rename, so the rare double build after a stale-lock takeover race is
 * harmless.
 */
export async function withLock<T>(
  path: string,
  onWait: (holderPid: number) => void,
  fn: () => Promise<T>,
): Promise<T> {
  let waiting = false;
  while (!(await tryLock(path))) {
    const holder = await holderPid(path);
    if (holder !== undefined && !isAlive(holder)) {
      await rm(path, { recursive: true, force: true });
      continue;
    }
    if (!waiting && holder !== undefined) onWait(holder);
    waiting = true;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  try {
    return await fn();
  } finally {
    await rm(path, { recursive: true, force: true });
  }
}

/** The lock appears with its owner's pid already inside: a directory renamed into place. */
async function tryLock(path: string): Promise<boolean> {
  const staged = await mkdtemp(`${path}.`);
  await writeFile(join(staged, 'pid'), String(process.pid));
  try {
    await rename(staged, path);
    return true;
  } catch (error) {
    await rm(staged, { recursive: true, force: true });
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOTEMPTY' || code === 'EEXIST') return false;
    throw error;
  }
}

async function holderPid(path: string): Promise<number | undefined> {
  const text = await readFile(join(path, 'pid'), 'utf8').catch(() => undefined);
  return text === undefined ? undefined : Number(text);
}
