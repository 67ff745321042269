import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isAlive } from './processes.ts';

const PREFIX = 'causeway-control-plane-';
const OWNER = 'owner.pid';

/**
 * A fresh directory for one control plane. Directories whose owner died without stopping (SIGKILL)
 * are removed on the way, since each holds tens of megabytes of preallocated etcd WAL.
 */
export async function controlPlaneDir(): Promise<string> {
  const base = tmpdir();
  for (const entry of await readdir(base)) {
    if (!entry.startsWith(PREFIX)) continue;
    const owner = await readFile(join(base, entry, OWNER), 'utf8').catch(() => undefined);
    // No owner file yet may mean another process is just creating it.
    if (owner !== undefined && !isAlive(Number(owner))) {
      await rm(join(base, entry), { recursive: true, force: true }).catch(() => {});
    }
  }
  const dir = await mkdtemp(join(base, PREFIX));
  await writeFile(join(dir, OWNER), String(process.pid));
  return dir;
}
