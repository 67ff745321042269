/**
 * Makes this repository's own imports of `causeway/*` (examples, benchmarks, test fixtures, the
 * quickstart) load its TypeScript sources, not the build in dist/ that the package's exports name for
 * users. Loaded with `--import ./test/support/sources.ts` (npm test, npm start and the benchmarks set it).
 */
import { registerHooks } from 'node:module';

const ROOT = new URL('../../', import.meta.url);
const ENTRY = /^causeway\/(functions|gateway|protocol|testing)$/;

/** The source file of a `causeway/*` entry point, for importers inside this repository; undefined otherwise. */
export function sourceEntry(specifier: string, importer: string | undefined): string | undefined {
  const entry = ENTRY.exec(specifier)?.[1];
  if (!entry || !importer?.startsWith(ROOT.href) || importer.includes('/node_modules/')) return undefined;
  return new URL(`${entry}/index.ts`, ROOT).href;
}

registerHooks({
  resolve(specifier, context, nextResolve) {
    const url = sourceEntry(specifier, context.parentURL);
    return url ? { url, format: 'module-typescript', shortCircuit: true } : nextResolve(specifier, context);
  },
});
