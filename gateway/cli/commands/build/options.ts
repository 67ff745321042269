/** `causeway build`'s flags, checked: what it bundles, for which target, and where. */
import { resolve } from 'node:path';
import { isLoopback } from '../../../../protocol/index.ts';
import { type GroupValues, UsageError } from '../../command-line.ts';
import { BUILD_TARGETS, type BuildOptions, type BuildTarget, workerNameOf } from './build.ts';
import type { BUILT } from './flags.ts';

/** A Workers name: what Cloudflare takes. */
const WORKER_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export function buildOptions(module: string, values: GroupValues<typeof BUILT>): BuildOptions {
  const target = values.target as BuildTarget;
  if (!BUILD_TARGETS.includes(target))
    throw new UsageError(`--target expects ${BUILD_TARGETS.join(' or ')}, got "${values.target}"`);
  if (target === 'node' && (values['worker-name'] !== undefined || values['jwks-url'] !== undefined))
    throw new UsageError('--worker-name and --jwks-url are for --target workers');
  const name = values['worker-name'] ?? workerNameOf(module);
  if (!WORKER_NAME.test(name))
    throw new UsageError(
      `--worker-name expects lowercase letters, digits and dashes (at most 63), got "${name}"`,
    );
  const jwksUrl = values['jwks-url'];
  if (jwksUrl !== undefined) {
    const url = URL.parse(jwksUrl);
    // As causeway/functions takes a keys URL: plain http only on this host.
    if (!url || (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))))
      throw new UsageError(`--jwks-url expects an https URL, got "${jwksUrl}"`);
  }
  return {
    target,
    module,
    out: resolve(values.out ?? `dist/${target}`),
    name,
    ...(jwksUrl ? { jwksUrl } : {}),
  };
}
