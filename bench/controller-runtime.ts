/**
 * The Go controller of bench/operators/controller-runtime, the operator a Go user writes with
 * controller-runtime: built from its module into the cache on first use, like the control plane, and
 * built afresh after any edit of its sources (the cache is keyed by their content).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  buildGoModule,
  cachedBinary,
  cacheRoot,
  contentKey,
  requirements,
} from '../deploy/control-plane/index.ts';
import type { Command } from './common.ts';

const SOURCES = new URL('operators/controller-runtime', import.meta.url).pathname;
const BINARY = 'controller-runtime-bench';
const CONTROLLER_RUNTIME = 'sigs.k8s.io/controller-runtime';

export const CONTROLLER_RUNTIME_VERSION = requirements(readFileSync(join(SOURCES, 'go.mod'), 'utf8')).find(
  ({ path }) => path === CONTROLLER_RUNTIME,
)?.version;
export const CONTROLLER_RUNTIME_NAME = `controller-runtime ${CONTROLLER_RUNTIME_VERSION?.slice(1)}`;

/** The controller's binary, built first if its sources have no build in the cache. */
export async function ensureControllerRuntime(say: (line: string) => void): Promise<string> {
  const root = join(cacheRoot(), 'bench', `controller-runtime-${await contentKey(SOURCES)}`);
  return cachedBinary(root, BINARY, {
    name: BINARY,
    from: `${BINARY} (controller-runtime ${CONTROLLER_RUNTIME_VERSION}, some 5 minutes on 2 cores) from ${SOURCES}`,
    make: ({ workDir, logPath }) => buildGoModule(SOURCES, BINARY, { workDir, logPath, onProgress: say }),
    onProgress: say,
  });
}

/** The controller serving one namespace. */
export function controllerRuntime(binary: string, namespace: string): Command {
  return { file: binary, args: ['--namespace', namespace] };
}

/** The Go and controller-runtime versions the binary was built with, as it records them (`go version -m`). */
export function controllerRuntimeVersions(binary: string): { go?: string; controllerRuntime?: string } {
  const info = execFileSync('go', ['version', '-m', binary], { encoding: 'utf8' });
  return {
    go: /^\S+: go(\S+)/.exec(info)?.[1],
    controllerRuntime: new RegExp(`^\\s+dep\\s+${CONTROLLER_RUNTIME}\\s+(\\S+)`, 'm').exec(info)?.[1],
  };
}
