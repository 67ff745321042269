/** Kopf, from PyPI into a virtualenv kept in the cache: the baseline every gateway figure is compared with. */
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const KOPF_VERSION = '1.45.2';
/**
 * Kopf as its users install it: `kopf run` drives its event loop with uvloop whenever uvloop imports
 * (kopf/_kits/loops.py, `proper_loop`), so leaving it out would slow the baseline down.
 */
const REQUIREMENT = `kopf[uvloop]==${KOPF_VERSION}`;

export function ensureKopf(cacheRoot: string, say: (line: string) => void): string {
  // Named after the extra too, so a virtualenv made before uvloop was in it is never taken for this one.
  const venv = join(cacheRoot, 'bench', `kopf-${KOPF_VERSION}-uvloop`);
  const marker = join(venv, '.complete');
  const kopf = join(venv, 'bin', 'kopf');
  if (existsSync(marker)) return kopf;
  say(`installing ${REQUIREMENT} from PyPI into ${venv} (first run only)`);
  rmSync(venv, { recursive: true, force: true }); // a virtualenv cannot be moved into place, so redo a partial one
  execFileSync('python3', ['-m', 'venv', venv], { stdio: 'inherit' });
  execFileSync(join(venv, 'bin', 'pip'), ['install', '--quiet', REQUIREMENT], { stdio: 'inherit' });
  writeFileSync(marker, '');
  return kopf;
}
