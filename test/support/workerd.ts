/**
 * Serves an operator module on workerd, Cloudflare Workers' runtime, inside Miniflare: bundled as a
 * Workers bundler does it (no Node built-ins, the `workerd` and `worker` export conditions first).
 */
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { repositorySources } from './sources.ts';

export interface Worker {
  /** Where the worker listens on this host over HTTP, as `wrangler dev` serves one: for a gateway to call. */
  url: string;
  fetch(request: Request): Promise<Response>;
  close(): Promise<void>;
}

export interface WorkerOptions {
  bindings: Record<string, string>;
  /** Where the module's imports resolve from; the repository by default. */
  cwd?: string;
  /** Bundle this repository's `causeway/*` sources rather than its build, as the repository's tests run. */
  sources?: boolean;
  /** The port to listen on; any free one unless given. */
  port?: number;
}

/** The module and what it imports in one ES module, as a Workers bundler (or Deno's, or Bun's) makes it. */
export async function bundleModule(
  entry: string,
  { cwd, sources }: Omit<WorkerOptions, 'bindings' | 'port'>,
): Promise<string> {
  const bundle = await build({
    entryPoints: [entry],
    ...(cwd ? { absWorkingDir: cwd } : {}),
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    conditions: ['workerd', 'worker', 'browser'],
    ...(sources ? { plugins: [repositorySources] } : {}),
    mainFields: ['module', 'main'],
    write: false,
    logLevel: 'silent',
  });
  return bundle.outputFiles[0]?.text ?? '';
}

export async function startWorker(
  entry: string,
  { bindings, cwd, sources, port }: WorkerOptions,
): Promise<Worker> {
  const mf = new Miniflare({
    modules: true,
    script: await bundleModule(entry, { ...(cwd ? { cwd } : {}), ...(sources ? { sources } : {}) }),
    compatibilityDate: '2025-09-01',
    bindings,
    host: '127.0.0.1',
    port: port ?? 0,
  });
  const url = (await mf.ready).href.replace(/\/$/, '');
  return {
    url,
    // Miniflare brings its own fetch classes, so the request crosses over as plain parts, and the
    // answer comes back as Miniflare's Response, which has the same shape as the global one.
    fetch: async (request) =>
      (await mf.dispatchFetch(request.url, {
        method: request.method,
        headers: Object.fromEntries(request.headers),
        body: request.method === 'GET' ? undefined : await request.text(),
      })) as unknown as Response,
    close: () => mf.dispose(),
  };
}
