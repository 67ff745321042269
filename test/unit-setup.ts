/**
 * The global setup of `npm run test:unit`: no control plane (test/setup.ts starts one for `npm test`),
 * only the compile cache both runs use.
 */
import { join } from 'node:path';
import { cacheRoot } from '../deploy/control-plane/index.ts';

/**
 * The test files and the hundreds of commands they start load the same sources: V8's code and the
 * stripped TypeScript, cached on disk, save each process most of its start (measured: 2.1 to 1.2 CPU
 * seconds for the CLI's).
 */
export function useCompileCache(): void {
  process.env.NODE_COMPILE_CACHE ??= join(cacheRoot(), 'node-compile-cache');
}

export const globalSetup = useCompileCache;
