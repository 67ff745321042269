/**
 * The command line's grammar. Each command declares its arguments and its flags, in groups; from
 * those declarations come both the parsing (node:util's parseArgs with that command's flags only, so
 * that a flag of another command is refused, naming whose it is) and the help.
 */
import { type ParseArgsOptionsConfig, parseArgs } from 'node:util';
import type { Logger } from '../logging.ts';

/** A command line that does not say a valid thing: exit code 2, and a pointer to the help. */
export class UsageError extends Error {
  /** The command whose usage it breaks, when the command is known. */
  command: string | undefined;

  constructor(message: string, command?: string) {
    super(message);
    this.command = command;
  }
}

export interface Flag {
  /** Its long name, without the dashes. */
  readonly name: string;
  /** Its one-letter name. */
  readonly short?: string;
  /** The placeholder of its value in help (`<ns>`): a flag with one takes a value, one without is a switch. */
  readonly value?: string;
  /** Repeated for several values. */
  readonly multiple?: boolean;
  /** The command cannot do without it: its usage line shows it. */
  readonly required?: boolean;
  /** What holds when it is not given, as help says it. */
  readonly default?: string;
  /** One sentence or more; help wraps it. */
  readonly description: string;
}

export interface FlagGroup {
  /** The group's heading in help. */
  readonly title: string;
  readonly flags: readonly Flag[];
}

type ValueOf<F extends Flag> = F extends { value: string }
  ? F extends { multiple: true }
    ? string[]
    : string
  : boolean;

/** What parseArgs gives for flags `F`, by name. */
export type FlagValues<F extends Flag> = { readonly [Each in F as Each['name']]?: ValueOf<Each> };

/** What parseArgs gives for the flags of groups `G`. */
export type GroupValues<G extends FlagGroup> = FlagValues<G['flags'][number]>;

/** A flag, its literal types kept: they type its value. */
export function flag<const F extends Flag>(definition: F): F {
  return definition;
}

export function group<const F extends readonly Flag[]>(
  title: string,
  ...flags: F
): { title: string; flags: F } {
  return { title, flags };
}

/** The flags of groups `G` but those named as one of groups `T`'s. */
type FlagsWithout<G extends readonly FlagGroup[], T extends readonly FlagGroup[]> = Exclude<
  G[number]['flags'][number],
  { name: T[number]['flags'][number]['name'] }
>;

/** The flags of `groups` that none of `taken` has, in one group. */
export function groupWithout<const G extends readonly FlagGroup[], const T extends readonly FlagGroup[]>(
  title: string,
  groups: G,
  taken: T,
): { title: string; flags: ReadonlyArray<FlagsWithout<G, T>> } {
  const names = new Set(taken.flatMap((each) => each.flags.map((one) => one.name)));
  const flags = groups.flatMap((each) => each.flags).filter((one) => !names.has(one.name));
  return { title, flags: flags as Array<FlagsWithout<G, T>> };
}

/** The flags every command takes. */
export const COMMON = group(
  'Common options',
  flag({ name: 'verbose', short: 'v', description: 'Log debug lines too.' }),
  flag({ name: 'quiet', short: 'q', description: 'Log only warnings and errors.' }),
  flag({
    name: 'log-level',
    value: '<level>',
    description: 'Log lines of this level and above: debug, info (the default), warning or error.',
  }),
  flag({
    name: 'log-format',
    value: '<format>',
    description:
      'text (for a person), json (one object per line, for a log pipeline), or auto (the default): text on a terminal, json otherwise. CAUSEWAY_LOG_FORMAT sets it too.',
  }),
  flag({ name: 'help', short: 'h', description: 'Show this help.' }),
  flag({ name: 'version', short: 'V', description: "Show Causeway's version." }),
);

export interface Invocation<Values, Argument extends string, Optional extends string = never> {
  values: Values & GroupValues<typeof COMMON>;
  /** The command's arguments, by the names it declares; an optional one not given is missing. */
  args: Readonly<Record<Argument, string>> & Readonly<Partial<Record<Optional, string>>>;
  logger: Logger;
}

export interface CommandDefinition<
  G extends readonly FlagGroup[],
  Argument extends string,
  Optional extends string = never,
> {
  readonly name: string;
  /** The names of its arguments, in their order: usage shows `<name>`. */
  readonly arguments: readonly Argument[];
  /** The name of one more argument, after those, that may be left out: usage shows `[<name>]`. */
  readonly optionalArgument?: Optional;
  /** What it says when an argument or a required flag is missing: `needs …`. */
  readonly needs?: string;
  /** What it does, for `causeway --help` and its own help. */
  readonly summary: string;
  /** A closing paragraph of its help. */
  readonly note?: string;
  readonly groups: G;
  run(invocation: Invocation<GroupValues<G[number]>, Argument, Optional>): Promise<void>;
}

/** Flags' values as parseArgs gives them, whatever the flags. */
export type ParsedValues = Readonly<Record<string, string | boolean | string[] | undefined>>;

/** A command, its flags' types erased so that commands make one list. */
export type Command = Omit<CommandDefinition<readonly FlagGroup[], string, string>, 'run'> & {
  run(invocation: {
    values: ParsedValues;
    args: Readonly<Record<string, string>>;
    logger: Logger;
  }): Promise<void>;
};

export function command<
  const G extends readonly FlagGroup[],
  const Argument extends string = never,
  const Optional extends string = never,
>(definition: CommandDefinition<G, Argument, Optional>): Command {
  return definition as unknown as Command;
}

export type ParsedCommandLine =
  | { command: undefined; values: GroupValues<typeof COMMON> }
  | { command: Command; values: ParsedValues; args: Record<string, string> };

/**
 * The command `argv` names (its first argument, whichever flags come before it), with its flags'
 * values and its arguments. A flag the command does not take is a usage error.
 */
export function parseCommandLine(argv: readonly string[], commands: readonly Command[]): ParsedCommandLine {
  const named = commandToken(argv, commands);
  if (!named) {
    refuseForeignFlags(argv, undefined, commands);
    return { command: undefined, values: strictParse(argv, [COMMON], undefined).values };
  }
  const chosen = commands.find((each) => each.name === named.name);
  if (!chosen) throw new UsageError(`unknown command "${named.name}"`);
  const rest = argv.toSpliced(named.index, 1);
  refuseForeignFlags(rest, chosen, commands);
  const { values, positionals } = strictParse(rest, [...chosen.groups, COMMON], chosen.name);
  if (values.help || values.version) return { command: chosen, values, args: {} };
  const missing =
    chosen.arguments.length > positionals.length ||
    requiredFlags(chosen).some((required) => values[required.name] === undefined);
  if (missing)
    throw new UsageError(
      `needs ${chosen.needs ?? `its arguments: causeway ${usageOf(chosen)}`}`,
      chosen.name,
    );
  const names = [...chosen.arguments, ...(chosen.optionalArgument ? [chosen.optionalArgument] : [])];
  if (positionals.length > names.length)
    throw new UsageError(`unexpected arguments: ${positionals.slice(names.length).join(' ')}`, chosen.name);
  const args = Object.fromEntries(positionals.map((value, index) => [names[index] as string, value]));
  return { command: chosen, values, args };
}

/** The first argument that no flag takes as its value, read with every command's flags. */
function commandToken(argv: readonly string[], commands: readonly Command[]) {
  const everyGroup = [...commands.flatMap((each) => each.groups), COMMON];
  const { tokens } = parseArgs({
    args: [...argv],
    options: parseArgsOptions(everyGroup),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const first = tokens.find((token) => token.kind === 'positional');
  return first && { name: first.value, index: first.index };
}

/** Refuses the first flag that `chosen` (or, without a command, causeway itself) does not take, saying whose it is. */
function refuseForeignFlags(
  args: readonly string[],
  chosen: Command | undefined,
  commands: readonly Command[],
) {
  const groups = [...(chosen?.groups ?? []), COMMON];
  const { tokens } = parseArgs({
    args: [...args],
    options: parseArgsOptions(groups),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  for (const token of tokens) {
    if (token.kind !== 'option' || groups.some((each) => each.flags.some((own) => own.name === token.name)))
      continue;
    const short = token.rawName.length === 2;
    const owners = commands.filter((other) =>
      other.groups.some((each) =>
        each.flags.some((theirs) => (short ? theirs.short : theirs.name) === token.name),
      ),
    );
    const whose = owners.length ? ` (it is one of ${inWords(owners.map((owner) => owner.name))})` : '';
    // A dash before what no flag is named with (`- !`, `-é`): the argument as given, quoted, says more
    // than the piece of it parseArgs took for a flag (`- `).
    const named =
      short && !/^-[A-Za-z0-9]$/.test(token.rawName) ? JSON.stringify(args[token.index]) : token.rawName;
    throw chosen
      ? new UsageError(`${named} is not an option of ${chosen.name}${whose}`, chosen.name)
      : new UsageError(`${named} is not an option of causeway without a command${whose}`);
  }
}

function strictParse(
  args: readonly string[],
  groups: readonly FlagGroup[],
  command: string | undefined,
): { values: ParsedValues; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({
      args: [...args],
      options: parseArgsOptions(groups),
      allowPositionals: true,
    });
    // parseArgs gives arrays of strings only for flags of strings: no flag is multiple and boolean.
    return { values: values as ParsedValues, positionals };
  } catch (error) {
    throw new UsageError((error as Error).message, command);
  }
}

function parseArgsOptions(groups: readonly FlagGroup[]): ParseArgsOptionsConfig {
  return Object.fromEntries(
    groups.flatMap((each) =>
      each.flags.map((one) => [
        one.name,
        {
          type: one.value === undefined ? 'boolean' : 'string',
          ...(one.short ? { short: one.short } : {}),
          ...(one.multiple ? { multiple: true } : {}),
        },
      ]),
    ),
  );
}

function requiredFlags(chosen: Command): Flag[] {
  return chosen.groups.flatMap((each) => each.flags.filter((one) => one.required));
}

/** `a`, `a and b`, `a, b and c`. */
function inWords(names: readonly string[]): string {
  return names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
}

const WIDTH = 100;
/** The column where descriptions start, unless every flag of the command is shorter. */
const WIDEST_COLUMN = 36;

/** `causeway --help`: the commands, and the common flags. */
export function overviewHelp(commands: readonly Command[], note: string): string {
  const commandRows = commands.map((each): [string, string] => [usageOf(each), each.summary]);
  return [
    'Usage: causeway <command> [options]',
    `Commands:\n${table(commandRows, 24)}`,
    section(COMMON, columnFor(COMMON.flags)),
    'Run `causeway <command> --help` for the options of a command.',
    wrap(note, WIDTH),
  ]
    .join('\n\n')
    .concat('\n');
}

/** `causeway <command> --help`: its usage, what it does, and its flags, grouped. */
export function commandHelp(chosen: Command): string {
  const groups = [...chosen.groups, COMMON];
  const column = columnFor(groups.flatMap((each) => each.flags));
  return [
    `Usage: causeway ${usageOf(chosen)} [options]`,
    wrap(chosen.summary, WIDTH),
    ...groups.map((each) => section(each, column)),
    ...(chosen.note ? [wrap(chosen.note, WIDTH)] : []),
  ]
    .join('\n\n')
    .concat('\n');
}

function usageOf(chosen: Command): string {
  const required = requiredFlags(chosen).map((one) => `--${one.name} ${one.value}`);
  const optional = chosen.optionalArgument ? [`[<${chosen.optionalArgument}>]`] : [];
  return [chosen.name, ...chosen.arguments.map((name) => `<${name}>`), ...optional, ...required].join(' ');
}

function section(flags: FlagGroup, column: number): string {
  return `${flags.title}:\n${table(
    flags.flags.map((one) => [labelOf(one), descriptionOf(one)]),
    column,
  )}`;
}

function labelOf(one: Flag): string {
  const names = `${one.short ? `-${one.short}, ` : '    '}--${one.name}`;
  return one.value === undefined ? names : `${names} ${one.value}`;
}

function descriptionOf(one: Flag): string {
  return one.default === undefined ? one.description : `${one.description} Default: ${one.default}.`;
}

function columnFor(flags: readonly Flag[]): number {
  return Math.min(WIDEST_COLUMN, Math.max(...flags.map((one) => labelOf(one).length)) + 4);
}

/** Rows of a label and its text, the text wrapped from `column` on: below a label too long for it. */
function table(rows: ReadonlyArray<readonly [string, string]>, column: number): string {
  return rows
    .map(([label, text]) => {
      const lines = wrap(text, WIDTH - column).split('\n');
      const indent = ' '.repeat(column);
      const first = `  ${label}`;
      const head =
        first.length + 2 <= column ? `${first.padEnd(column)}${lines[0]}` : `${first}\n${indent}${lines[0]}`;
      return [head, ...lines.slice(1).map((line) => `${indent}${line}`)].join('\n');
    })
    .join('\n');
}

/** `text` in lines of at most `width` characters, broken between words. */
function wrap(text: string, width: number): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  return [...lines, line].join('\n');
}
