#!/usr/bin/env node
/**
 * The installed `causeway` command (bundled into dist/cli/causeway.mjs). It checks the Node version
 * before loading the rest, whose dependencies fail on an older Node with a stack trace. Then, unless
 * they are in effect already, it applies the memory settings (memory-settings.ts), which only a start
 * of Node can: it replaces its process with Node started with them (execve: the same process, so its
 * pid, signals, output and exit code stay the caller's; no second process to hold memory or forward
 * signals to). Where there is no execve (Windows), the CLI runs without them.
 */
// A namespace: a named import of what Node 20 lacks would fail before the version check can speak.
import * as nodeModule from 'node:module';
import { missingMemorySettings } from './memory-settings.ts';
import { nodeVersionProblem } from './node-version.ts';

const problem = nodeVersionProblem(process.versions.node);
if (problem) {
  process.stderr.write(`causeway: ${problem}\n`);
  process.exit(1);
}
const missing = missingMemorySettings(process.execArgv, process.env);
if (missing && process.execve) {
  process.execve(
    process.execPath,
    [process.execPath, ...process.execArgv, ...missing.flags, ...process.argv.slice(1)],
    { ...process.env, ...missing.env },
  );
}
// V8's compiled code of the bundle, kept on disk (in the temporary directory) for the next start:
// 0.69 to 0.56 CPU seconds for `--help`. Where the directory is not writable, Node goes on without it.
nodeModule.enableCompileCache();
const { cli } = await import('./main.ts');
await cli(process.argv.slice(2));
