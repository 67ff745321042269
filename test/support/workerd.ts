/**
 * Serves an operator module on workerd, Cloudflare Workers' runtime, inside Miniflare: bundled as
 * `causeway build --target workers` bundles it, at the compatibility date its wrangler.toml says.
 */
import { Miniflare } from 'miniflare';
import { bundleForWorkers, WORKERS_COMPATIBILITY_DATE } from '../../gateway/cli/commands/build/build.ts';

export interface Worker {
  /** Where the worker listens on this host (over HTTP, as `wrangler dev` serves one, unless `tls`): for a gateway to call. */
  url: string;
  fetch(request: Request): Promise<Response>;
  close(): Promise<void>;
}

export interface WorkerOptions {
  bindings: Record<string, string>;
  /** The port to listen on; any free one unless given. */
  port?: number;
  /** The date of the worker's wrangler.toml; the one `causeway build` writes unless given. */
  compatibilityDate?: string;
  /** A certificate and its key (PEM) to serve HTTPS with, workerd terminating TLS itself; HTTP unless given. */
  tls?: { cert: string; key: string };
}

/** The module bundled (this repository's `causeway/*` imports resolve to its sources, by tsconfig.json's paths) and served. */
export async function startWorker(entry: string, options: WorkerOptions): Promise<Worker> {
  return serveWorker(await bundleForWorkers(entry), options);
}

/** A bundle, one ES module as `causeway build --target workers` writes it, served by workerd. */
export async function serveWorker(
  script: string,
  { bindings, port, compatibilityDate, tls }: WorkerOptions,
): Promise<Worker> {
  const mf = new Miniflare({
    modules: true,
    script,
    compatibilityDate: compatibilityDate ?? WORKERS_COMPATIBILITY_DATE,
    bindings,
    host: '127.0.0.1',
    port: port ?? 0,
    ...(tls ? { httpsCert: tls.cert, httpsKey: tls.key } : {}),
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
