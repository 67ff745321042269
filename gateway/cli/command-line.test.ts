import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  COMMON,
  type Command,
  commandHelp,
  type Flag,
  overviewHelp,
  parseCommandLine,
  UsageError,
} from './command-line.ts';
import { COMMANDS } from './main.ts';

const flagsOf = (command: Command) => command.groups.flatMap((group) => group.flags);

function refuses(argv: string[], message: string, command?: string): void {
  assert.throws(
    () => parseCommandLine(argv, COMMANDS),
    (error: unknown) => {
      assert.ok(error instanceof UsageError, `a UsageError, not ${error}`);
      assert.equal(error.message, message);
      assert.equal(error.command, command);
      return true;
    },
  );
}

/** The long names of the flags a help text lists. */
const listed = (help: string) =>
  [...help.matchAll(/^ {2}(?:-\w, | {4})--([a-z-]+)/gm)].map((match) => match[1]);

describe('the command line', () => {
  it('gives a flag one kind in every command that takes it: its short name and whether it takes a value', () => {
    const kinds = new Map<string, string>();
    for (const flag of [...COMMANDS.flatMap(flagsOf), ...COMMON.flags] as Flag[]) {
      const kind = `-${flag.short ?? ''} ${flag.value === undefined ? 'switch' : 'value'}`;
      assert.equal(kinds.get(flag.name) ?? kind, kind, `--${flag.name}`);
      kinds.set(flag.name, kind);
    }
    const shorts = [...kinds]
      .filter(([, kind]) => !kind.startsWith('- '))
      .map(([, kind]) => kind.split(' ')[0]);
    assert.equal(new Set(shorts).size, shorts.length, 'one flag to a letter');
  });

  it("finds the command after the flags before it, and gives its arguments by name and its flags' values", () => {
    const line = parseCommandLine(
      ['-n', 'team-a', 'release', 'kex', 'stuck', '--finalizer', 'x/y'],
      COMMANDS,
    );
    assert.equal(line.command?.name, 'release');
    assert.deepEqual(line.command && line.args, { resource: 'kex', name: 'stuck' });
    assert.deepEqual({ ...line.values }, { namespace: 'team-a', finalizer: 'x/y' });
    const run = parseCommandLine(['run', 'operator.ts', '-n', 'a', '--namespace', 'b', '-v'], COMMANDS);
    assert.deepEqual({ ...run.values }, { namespace: ['a', 'b'], verbose: true });
  });

  it('refuses a flag that the command does not take, saying which commands do', () => {
    refuses(
      ['serve', '--functions', 'x=http://y', 'operator.ts'],
      '--functions is not an option of serve (it is one of gateway, explain and rbac)',
      'serve',
    );
    refuses(
      ['serve', 'operator.ts', '-A'],
      '-A is not an option of serve (it is one of run, gateway, dev and rbac)',
      'serve',
    );
    refuses(['run', 'operator.ts', '--frobnicate'], '--frobnicate is not an option of run', 'run');
    // A dash before what no flag is named with: the argument as given, not the dash and a space.
    refuses(['gateway', '- !'], '"- !" is not an option of gateway', 'gateway');
    refuses(
      ['--functions', 'x=http://y'],
      '--functions is not an option of causeway without a command (it is one of gateway, explain and rbac)',
    );
  });

  it('refuses an unknown command, a missing argument or required flag, and arguments too many', () => {
    refuses(['frobnicate'], 'unknown command "frobnicate"');
    refuses(['run'], "needs the operator module's path, e.g. causeway run ./operator.ts", 'run');
    refuses(
      ['conformance', 'http://127.0.0.1:8080'],
      'needs the service URL and its name, e.g. causeway conformance http://127.0.0.1:8080 --name billing',
      'conformance',
    );
    refuses(
      ['build', 'operator.ts'],
      "needs the operator module's path and the target, e.g. causeway build --target workers ./operator.ts",
      'build',
    );
    refuses(['crd', 'extra', 'more'], 'unexpected arguments: extra more', 'crd');
    refuses(['gateway', '--concurrency'], "Option '--concurrency <value>' argument missing", 'gateway');
  });

  it('takes an optional argument when given, and no other', () => {
    const given = parseCommandLine(['rbac', 'operator.ts', '-n', 'a'], COMMANDS);
    assert.deepEqual(given.command && given.args, { module: 'operator.ts' });
    const left = parseCommandLine(['rbac', '--functions', 'x=http://y'], COMMANDS);
    assert.deepEqual(left.command && left.args, {});
    refuses(['rbac', 'operator.ts', 'other.ts'], 'unexpected arguments: other.ts', 'rbac');
  });

  it("gives rbac every flag of gateway, and so of run, as they take it: a gateway's arguments as they are", () => {
    const command = (name: string) => COMMANDS.find((each) => each.name === name) as Command;
    const kinds = (of: Command) =>
      new Map(flagsOf(of).map((flag) => [flag.name, [flag.short, flag.value === undefined, flag.multiple]]));
    const rbac = kinds(command('rbac'));
    for (const name of ['gateway', 'run'])
      for (const [flag, kind] of kinds(command(name)))
        assert.deepEqual(rbac.get(flag), kind, `--${flag} of ${name}`);
  });

  it('takes --help and --version without the arguments the command needs', () => {
    assert.equal(parseCommandLine(['run', '--help'], COMMANDS).values.help, true);
    assert.equal(parseCommandLine(['-V'], COMMANDS).values.version, true);
  });

  it("lists in a command's help the flags it takes, its own and the common ones, and no other", () => {
    for (const command of COMMANDS) {
      const help = commandHelp(command);
      assert.match(help, new RegExp(`^Usage: causeway ${command.name}[ <]`), command.name);
      assert.deepEqual(
        listed(help).sort(),
        [...new Set([...flagsOf(command), ...COMMON.flags].map((flag) => flag.name))].sort(),
        command.name,
      );
    }
  });

  it('lists every command in the overview, with its arguments', () => {
    const help = overviewHelp(COMMANDS, 'A note.');
    const commands = [...help.matchAll(/^ {2}([a-z]+)(?: \[?<|\s{2,})/gm)].map((match) => match[1]);
    assert.deepEqual(commands, [
      'init',
      'run',
      'serve',
      'gateway',
      'dev',
      'freeze',
      'resume',
      'explain',
      'conformance',
      'build',
      'crd',
      'rbac',
      'release',
    ]);
    assert.match(help, /^ {2}release <resource> <name>$/m);
    assert.match(help, /^ {2}explain <object> +Explain what the gateway would do with one object/m);
    assert.match(help, /^ {2}conformance <url> --name <name>$/m);
    assert.match(help, /^ {2}build <module> --target <target>$/m);
    assert.match(help, /^ {2}rbac \[<module>\] +Print the least-privilege/m);
    assert.deepEqual(listed(help), ['verbose', 'quiet', 'log-level', 'log-format', 'help', 'version']);
  });
});
