#!/usr/bin/env node
/** `causeway`: run operators written with causeway/functions, as `kopf run` runs Kopf's. */
import packageJson from '../../package.json' with { type: 'json' };
import { createLogger } from '../logging.ts';
import { CLUSTER_NOTE } from './cluster.ts';
import { commandHelp, overviewHelp, parseCommandLine, UsageError } from './command-line.ts';
import { buildCommand } from './commands/build/command.ts';
import { conformanceCommand } from './commands/conformance/command.ts';
import { crdCommand } from './commands/crd/command.ts';
import { devCommand } from './commands/dev/command.ts';
import { explainCommand } from './commands/explain/command.ts';
import { freezeCommand, resumeCommand } from './commands/freeze/command.ts';
import { gatewayCommand } from './commands/gateway/command.ts';
import { initCommand } from './commands/init/command.ts';
import { rbacCommand } from './commands/rbac/command.ts';
import { releaseCommand } from './commands/release/command.ts';
import { runCommand } from './commands/run/command.ts';
import { serveCommand } from './commands/serve/command.ts';
import { logFormat, logLevel } from './flags/logging.ts';

/** The commands, in the order `causeway --help` lists them. */
export const COMMANDS = [
  initCommand,
  runCommand,
  serveCommand,
  gatewayCommand,
  devCommand,
  freezeCommand,
  resumeCommand,
  explainCommand,
  conformanceCommand,
  buildCommand,
  crdCommand,
  rbacCommand,
  releaseCommand,
];

export async function main(argv: string[]): Promise<void> {
  const line = parseCommandLine(argv, COMMANDS);
  if (line.values.version) {
    process.stdout.write(`${packageJson.version}\n`);
  } else if (!line.command) {
    process.stdout.write(overviewHelp(COMMANDS, CLUSTER_NOTE));
  } else if (line.values.help) {
    process.stdout.write(commandHelp(line.command));
  } else {
    const { command, values, args } = line;
    try {
      const format = logFormat(values, process.stderr.isTTY === true, process.env.CAUSEWAY_LOG_FORMAT);
      // The commands this one starts (causeway dev's function service, whose stderr is a pipe to this
      // process) write their lines as it does.
      process.env.CAUSEWAY_LOG_FORMAT = format;
      const logger = createLogger({ level: logLevel(values), format });
      await command.run({ values, args, logger });
    } catch (error) {
      if (error instanceof UsageError) error.command ??= command.name;
      throw error;
    }
  }
}

/** Runs the command line as the `causeway` command does: errors become one line and an exit code. */
export async function cli(argv: string[]): Promise<void> {
  try {
    await main(argv);
  } catch (error) {
    const usage = error instanceof UsageError;
    const command = usage && error.command ? `causeway ${error.command}` : 'causeway';
    process.stderr.write(`${command}: ${error instanceof Error ? error.message : error}\n`);
    if (usage) process.stderr.write(`Run \`${command} --help\` for usage.\n`);
    process.exit(usage ? 2 : 1);
  }
}

if (import.meta.main) await cli(process.argv.slice(2));
