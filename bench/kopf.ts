/** Kopf, from PyPI into a virtualenv kept in the cache: the baseline every gateway figure is compared with. */
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const KOPF_VERSION = '1.45.2';

export function ensureKopf(cacheRoot: string, say: (line: string) => void): string {
  const venv = join(cacheRoot, 'bench', `kopf-${KOPF_VERSION}`);
  const marker = join(venv, '.complete');
  const kopf = join(venv, 'bin', 'kopf');
  if (existsSync(marker)) return kopf;
  say(`installing kopf==${KOPF_VERSION} from PyPI into ${venv} (first run only)`);
  rmSync(venv, { recursive: true, force: true }); // a virtualenv cannot be moved into place, so redo a partial one
  execFileSync('python3', ['-m', 'venv', venv], { stdio: 'inherit' });
  execFileSync(join(venv, 'bin', 'pip'), ['install', '--quiet', `kopf==${KOPF_VERSION}`], {
    stdio: 'inherit',
  });
  writeFileSync(marker, '');
  return kopf;
}
