/** Loads a user's operator module: its default export is a fetch handler made with `causeway/functions`. */
import { type ModuleFormat, registerHooks, stripTypeScriptTypes } from 'node:module';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { compileFunction } from 'node:vm';
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
  runModuleSyntaxAsModules();
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

/** The format a file of the user's runs in instead, when it cannot be CommonJS. */
const AS_MODULE: Partial<Record<string, ModuleFormat>> = {
  commonjs: 'module',
  'commonjs-typescript': 'module-typescript',
};

let hooked = false;

/**
 * Node runs the .js and .ts files of a package whose package.json says "type": "commonjs" as
 * CommonJS, and `npm init -y` writes just that (npm 11): an operator module with `import`, as the
 * README writes it, then fails with "Cannot use import statement outside a module". This load hook
 * runs such a file of the user's (outside node_modules) as an ES module where it cannot be CommonJS,
 * as Node itself decides for a package.json without "type"; a file that can stays CommonJS.
 */
function runModuleSyntaxAsModules(): void {
  if (hooked) return;
  hooked = true;
  registerHooks({
    load(url, context, nextLoad) {
      const loaded = nextLoad(url, context);
      const format = AS_MODULE[loaded.format ?? ''];
      if (!format || !/^file:.*\.[jt]s$/.test(url) || url.includes('/node_modules/') || !loaded.source)
        return loaded;
      const source =
        typeof loaded.source === 'string' ? loaded.source : new TextDecoder().decode(loaded.source);
      let code: string;
      try {
        code = format === 'module' ? source : withoutWarnings(() => stripTypeScriptTypes(source));
      } catch {
        return loaded; // syntax type stripping does not take (an enum): Node says so as it loads it
      }
      return cannotBeCommonJs(code) ? { ...loaded, format } : loaded;
    },
  });
}

/** V8's errors for what a module may hold and CommonJS may not (Node's own list for the same choice). */
const ONLY_IN_MODULES = [
  'Cannot use import statement outside a module',
  "Unexpected token 'export'",
  "Cannot use 'import.meta' outside a module",
  'await is only valid in async functions and the top level bodies of modules',
  ...['module', 'exports', 'require', '__filename', '__dirname'].map(
    (name) => `Identifier '${name}' has already been declared`,
  ),
];

function cannotBeCommonJs(code: string): boolean {
  try {
    // As Node wraps a CommonJS module.
    compileFunction(code, ['exports', 'require', 'module', '__filename', '__dirname']);
    return false;
  } catch (error) {
    return error instanceof SyntaxError && ONLY_IN_MODULES.includes(error.message);
  }
}

/**
 * stripTypeScriptTypes warns that it is experimental at its first call: the warning would seem to be
 * about the user's code, whose types Node strips (no longer experimentally) all the same.
 */
function withoutWarnings<T>(run: () => T): T {
  const emitWarning = process.emitWarning;
  process.emitWarning = () => {};
  try {
    return run();
  } finally {
    process.emitWarning = emitWarning;
  }
}
