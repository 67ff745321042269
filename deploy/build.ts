/**
 * Builds the published package into dist/:
 * - the library (`causeway/functions`, `/gateway`, `/protocol`, `/testing`): JavaScript, declarations
 *   and source maps, compiled by tsc with tsconfig.build.json;
 * - the `causeway` CLI, bundled by esbuild: it starts in a fraction of the time the unbundled modules
 *   take (client-node alone is a thousand of them). Operator modules stay outside the bundle; the CLI
 *   imports them at run time, and they import the library;
 * - the template `causeway init` copies.
 *
 *   node deploy/build.ts      (npm run build; npm pack runs it as prepack)
 */
import { execFile } from 'node:child_process';
import { cp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';

const ROOT = new URL('..', import.meta.url).pathname;

const DIST = join(ROOT, 'dist');

export async function buildLibrary(): Promise<void> {
  const tsc = join(ROOT, 'node_modules/.bin/tsc');
  await promisify(execFile)(tsc, ['-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT });
}

/**
 * Bundles the CLI into `outdir`; returns the path of its entry point, the one to run. `root`: a
 * checkout of another commit instead of this one (a benchmark's baseline).
 */
export async function bundleCli(outdir = join(DIST, 'cli'), root = ROOT): Promise<string> {
  await build({
    // The launcher checks the Node version first; the rest is a chunk it imports once that passed.
    entryPoints: { causeway: join(root, 'gateway/cli/launch.ts') },
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    chunkNames: 'causeway-[hash]',
    platform: 'node',
    format: 'esm',
    target: 'node22',
    minifyWhitespace: true,
    minifySyntax: true,
    sourcemap: true,
    sourcesContent: false,
    legalComments: 'linked',
    logLevel: 'warning',
    // A native addon, loaded only for an ngrok tunnel: resolved from node_modules, where the package's
    // dependencies are installed, when it is.
    // esbuild, which `causeway build` runs, finds its native binary from its own package.
    external: ['@ngrok/ngrok', 'esbuild'],
    // Some bundled dependencies are CommonJS and require() Node built-ins.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
  });
  await cp(join(ROOT, 'gateway/cli/commands/init/template'), join(outdir, 'template'), { recursive: true });
  return join(outdir, 'causeway.mjs');
}

if (import.meta.main) {
  await rm(DIST, { recursive: true, force: true });
  await Promise.all([buildLibrary(), bundleCli()]);
  process.stderr.write(`built the library and the causeway CLI into ${DIST}\n`);
}
