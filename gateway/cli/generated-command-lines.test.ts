import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { oddString } from '../../test/support/arbitraries.ts';
import { nowhere } from '../../test/support/cli-options.ts';
import { COMMON, type Flag, parseCommandLine, UsageError } from './command-line.ts';
import { devGatewayOptions } from './commands/dev/options.ts';
import { type GatewayOnlyValues, gatewayOnlyOptions } from './commands/gateway/options.ts';
import { serveOptions } from './commands/serve/options.ts';
import { logFormat, logLevel } from './flags/logging.ts';
import { gatewayOptions } from './gateway-options.ts';
import { COMMANDS } from './main.ts';

describe('generated command lines (property-based)', () => {
  /** A file a flag names that is not there: the error names it, as reading it would. */
  const missing = (path: string): string => {
    throw new Error(`ENOENT: no such file, open '${path}'`);
  };
  const commands = ['run', 'gateway', 'dev', 'serve'] as const;
  const flagsOf = (name: string): Flag[] => [
    ...(COMMANDS.find((each) => each.name === name)?.groups ?? []).flatMap((group) => group.flags),
    ...(COMMON.flags as readonly Flag[]),
  ];
  const value = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        '',
        '0',
        '-1',
        '1.5',
        '1e3',
        '1e999',
        '0x10',
        ' 8',
        '8',
        '600',
        '99999999999999999999',
        'x',
        '-',
        '--',
        '=',
        'a=b',
        'http://x:1',
        'default',
      ),
    },
    oddString,
  );
  /** A token of a command line: a flag of the command's (long or short, its value apart or after =), another command's, or a stray. */
  const token = (name: (typeof commands)[number]) =>
    fc.oneof(
      // Flags of numbers more often: few among many, and each reads its value its own way.
      fc
        .tuple(
          fc.oneof(
            fc.constantFrom(...flagsOf(name)),
            fc.constantFrom(
              ...flagsOf(name).filter((flag) => /^<(n|s|port|days|seconds)>$/.test(flag.value ?? '')),
            ),
          ),
          value,
          fc.nat(3),
        )
        .map(([flag, given, form]) => {
          if (flag.value === undefined)
            return form === 0 && flag.short ? [`-${flag.short}`] : [`--${flag.name}`];
          if (form === 0) return [`--${flag.name}=${given}`];
          return form === 1 && flag.short ? [`-${flag.short}`, given] : [`--${flag.name}`, given];
        }),
      fc.constantFrom(
        ['--functions'],
        ['--unknown-flag'],
        ['-Z'],
        ['--'],
        ['-'],
        ['--verbose=yes'],
        ['operator.ts'],
      ),
      value.map((given) => [given]),
    );
  const commandLine = fc
    .constantFrom(...commands)
    .chain((name) => fc.array(token(name), { maxLength: 6 }).map((tokens) => [name, ...tokens.flat()]));

  it('gives a command options, or a usage error naming what is wrong, and never another error', () => {
    fc.assert(
      fc.property(commandLine, (argv) => {
        try {
          const line = parseCommandLine(argv, COMMANDS);
          if (!line.command || line.values.help || line.values.version) return;
          logLevel(line.values);
          logFormat(line.values, false, undefined);
          const values = line.values as GatewayOnlyValues;
          if (line.command.name === 'serve') serveOptions(line.values);
          if (line.command.name === 'run') gatewayOptions(values, missing, nowhere);
          if (line.command.name === 'dev') devGatewayOptions(values, missing, nowhere);
          if (line.command.name === 'gateway') {
            gatewayOnlyOptions(
              values,
              { text: missing, secret: (path) => new TextEncoder().encode(missing(path)) },
              nowhere,
            );
          }
          // Taken: a number is one as written in decimal digits, not whatever Number() makes of it.
          for (const flag of ['concurrency', 'function-timeout'] as const) {
            const given = values[flag];
            if (given) assert.match(given, /^\d+$/, `--${flag} ${JSON.stringify(given)} taken`);
          }
        } catch (error) {
          if (error instanceof assert.AssertionError) throw error;
          if (error instanceof Error && error.message.startsWith('ENOENT')) return;
          assert.ok(error instanceof UsageError, `a UsageError, not ${(error as Error).stack}`);
          const named =
            /^(needs |unexpected arguments|unknown command)/.test(error.message) ||
            argv.some(
              (each) =>
                each.startsWith('-') &&
                each.length > 1 &&
                error.message.includes(each.split('=')[0] as string),
            );
          assert.ok(named, `${error.message} names a flag of ${JSON.stringify(argv)}`);
        }
      }),
      { numRuns: 1000 },
    );
  });
});
