/** Loads a user's operator module: its default export is a fetch handler made with `causeway/functions`. */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { FetchHandler } from '../dispatch/transport.ts';

export async function loadOperatorModule(path: string): Promise<FetchHandler> {
  const url = pathToFileURL(resolve(path)).href;
  let module: { default?: unknown };
  try {
    module = await import(url);
  } catch (error) {
    throw new Error(`cannot load ${path}: ${error instanceof Error ? error.message : error}`, {
      cause: error,
    });
  }
  const handler = module.default as Partial<FetchHandler> | undefined;
  if (typeof handler?.fetch !== 'function') {
    throw new Error(`${path} has no default export with a fetch method: end it with \`export default op;\``);
  }
  return handler as FetchHandler;
}
