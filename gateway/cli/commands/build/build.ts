/**
 * `causeway build`: a function module and what it imports bundled into one ES module, for Cloudflare
 * Workers (with the wrangler.toml that deploys it) or for Node (a server of its own, for an image).
 * esbuild is imported when a build runs: the other commands do not load it.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { JWKS_URL_VARIABLE, JWKS_VARIABLE, SECRET_VARIABLE } from '../../../../protocol/index.ts';

export const BUILD_TARGETS = ['workers', 'node'] as const;
export type BuildTarget = (typeof BUILD_TARGETS)[number];

/** The Workers compatibility date the bundles are tested with, on the workerd of this package's miniflare. */
export const WORKERS_COMPATIBILITY_DATE = '2025-09-01';

/** What each target writes into the output folder. */
export const BUILT_FILES = { workers: 'worker.mjs', node: 'service.mjs', wrangler: 'wrangler.toml' } as const;

export interface BuildOptions {
  target: BuildTarget;
  /** The operator module's path. */
  module: string;
  /** The folder the files are written to, made if missing. */
  out: string;
  /** The Worker's name in wrangler.toml. */
  name: string;
  /** Where the Worker fetches the gateway's public keys; without it, it verifies with a shared secret. */
  jwksUrl?: string;
}

/** Writes the bundle (and for Workers its wrangler.toml) into `out`; returns the paths written. */
export async function buildModule(options: BuildOptions): Promise<string[]> {
  const { target, module, out } = options;
  await mkdir(out, { recursive: true });
  const bundlePath = join(out, BUILT_FILES[target]);
  if (target === 'node') {
    await writeFile(bundlePath, await bundleForNode(module));
    return [bundlePath];
  }
  await writeFile(bundlePath, await bundleForWorkers(module));
  const configPath = join(out, BUILT_FILES.wrangler);
  await writeFile(configPath, wranglerConfig(options.name, options.jwksUrl));
  return [bundlePath, configPath];
}

/** The module as a Workers bundler makes it: no Node built-ins, the `workerd` and `worker` export conditions first. */
export async function bundleForWorkers(module: string): Promise<string> {
  const { build } = await import('esbuild');
  const bundle = await build({
    entryPoints: [resolve(module)],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['module', 'main'],
    write: false,
    logLevel: 'silent',
  });
  return bundle.outputFiles[0]?.text ?? '';
}

/**
 * The module served over HTTP by Node, as `causeway serve` serves it, in one file that needs nothing
 * installed: PORT and HOST say where it listens (8080, 0.0.0.0), and the environment what it verifies
 * calls with ($CAUSEWAY_JWKS, $CAUSEWAY_JWKS_URL or $CAUSEWAY_SECRET, as causeway/functions reads them).
 */
export async function bundleForNode(module: string): Promise<string> {
  const { build } = await import('esbuild');
  const bundle = await build({
    stdin: {
      contents: nodeServer(resolve(module)),
      // The server's own import, @hono/node-server, resolves from Causeway's installation.
      resolveDir: dirname(fileURLToPath(import.meta.url)),
      loader: 'js',
    },
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    // CommonJS dependencies of the module may require() Node built-ins.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
    write: false,
    logLevel: 'silent',
  });
  return bundle.outputFiles[0]?.text ?? '';
}

const VERIFYING_VARIABLES = [JWKS_VARIABLE, JWKS_URL_VARIABLE, SECRET_VARIABLE];
const NOTHING_TO_VERIFY_WITH = `nothing to verify the gateway's calls with: set ${JWKS_VARIABLE}, ${JWKS_URL_VARIABLE} or ${SECRET_VARIABLE}`;

function nodeServer(modulePath: string): string {
  return `import { serve } from '@hono/node-server';
import service from ${JSON.stringify(modulePath)};

if (!${JSON.stringify(VERIFYING_VARIABLES)}.some((name) => process.env[name])) {
  console.error(${JSON.stringify(NOTHING_TO_VERIFY_WITH)});
  process.exit(1);
}
const server = serve(
  { fetch: (request) => service.fetch(request), port: Number(process.env.PORT || 8080), hostname: process.env.HOST || '0.0.0.0' },
  ({ address, port }) => console.log(\`function service listening on http://\${address.includes(':') ? \`[\${address}]\` : address}:\${port}\`),
);
for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, () => server.close(() => process.exit(0)));
`;
}

/** What `wrangler deploy` reads, next to the bundle; what the SDK verifies with is a var, or a secret put apart. */
export function wranglerConfig(name: string, jwksUrl: string | undefined): string {
  const keys = jwksUrl
    ? [
        '[vars]',
        "# Where the Worker fetches the gateway's public keys to verify its calls with.",
        `${JWKS_URL_VARIABLE} = ${JSON.stringify(jwksUrl)}`,
      ]
    : [
        '# The Worker verifies its calls with a secret shared with the gateway, which wrangler keeps:',
        `#   wrangler secret put ${SECRET_VARIABLE}`,
      ];
  return [
    '# Made by `causeway build --target workers`; deploy it with `wrangler deploy` from this folder.',
    `name = ${JSON.stringify(name)}`,
    `main = ${JSON.stringify(BUILT_FILES.workers)}`,
    `compatibility_date = ${JSON.stringify(WORKERS_COMPATIBILITY_DATE)}`,
    '# Bundled already: wrangler uploads it as it is.',
    'no_bundle = true',
    '',
    ...keys,
    '',
  ].join('\n');
}

/** A Worker's name from the module's file name: lowercase letters, digits and dashes, as Workers names go. */
export function workerNameOf(module: string): string {
  const stem = basename(module, extname(module))
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return stem.slice(0, 63) || 'function-service';
}
