#!/usr/bin/env node
/**
 * The installed `causeway` command (bundled into dist/cli/causeway.mjs). It checks the Node version
 * before loading the rest, whose dependencies fail on an older Node with a stack trace.
 */
import { nodeVersionProblem } from './node-version.ts';

const problem = nodeVersionProblem(process.versions.node);
if (problem) {
  process.stderr.write(`causeway: ${problem}\n`);
  process.exit(1);
}
const { cli } = await import('./main.ts');
await cli(process.argv.slice(2));
