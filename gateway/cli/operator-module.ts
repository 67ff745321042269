/** Loads a user's operator module: its default export is a fetch handler made with `causeway/functions`. */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { FetchHandler } from '../dispatch/transport.ts';

/** What to do when Node cannot run a TypeScript module, by the code of its error. */
const TYPESCRIPT_HINTS: Record<string, string> = {
  // Node before 22.18 (23.6 in 23.x), or type stripping turned off.
  ERR_UNKNOWN_FILE_EXTENSION:
    "this Node does not strip TypeScript's types (Node 22.18+ and 23.6+ do, unless --no-experimental-strip-types): run a newer Node, or compile the module to JavaScript",
  ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING:
    'Node runs TypeScript only outside node_modules: compile the module to JavaScript, or keep it in your project',
};

export async function loadOperatorModule(path: string): Promise<FetchHandler> {
  const url = pathToFileURL(resolve(path)).href;
  let module: { default?: unknown };
  try {
    module = await import(url);
  } catch (error) {
    const hint = TYPESCRIPT_HINTS[(error as NodeJS.ErrnoException).code ?? ''];
    const reason = error instanceof Error ? error.message : error;
    throw new Error(`cannot load ${path}: ${reason}${hint && /\.[cm]?ts$/.test(path) ? `: ${hint}` : ''}`, {
      cause: error,
    });
  }
  const handler = module.default as Partial<FetchHandler> | undefined;
  if (typeof handler?.fetch !== 'function') {
    throw new Error(`${path} has no default export with a fetch method: end it with \`export default op;\``);
  }
  return handler as FetchHandler;
}
