/**
 * Where a V8 CPU profile's time goes, by source function: a profile of the bundled CLI (the benchmarks'
 * `--node-flags="--cpu-prof --cpu-prof-dir=DIR"`) names only the bundle's few long lines, so each frame
 * is mapped back through the bundle's source maps to the function, file and line it was written as.
 * Prints the idle, GC and program shares, then the functions with the most self and total time.
 *
 *   node bench/cpu-profile.ts <profile.cpuprofile[.gz]> [--bundle <dir>] [--root <checkout>] [--top 25]
 *     [--write <mapped.cpuprofile.gz>]
 *
 * `--write` saves the profile with its frames so mapped, gzipped: it opens in Chrome's DevTools with
 * the sources' names and lines, without the bundle.
 * `--bundle` is the `bundle` folder the benchmarks copy beside the profiles; without it the frames keep
 * the bundle's names.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { gunzipSync, gzipSync } from 'node:zlib';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    bundle: { type: 'string' },
    root: { type: 'string', default: process.cwd() },
    top: { type: 'string', default: '25' },
    write: { type: 'string' },
  },
});
const [file] = positionals;
if (!file) throw new Error('usage: node bench/cpu-profile.ts <profile> [--bundle <dir>] [--top N]');
const raw = readFileSync(file);
const profile = JSON.parse((file.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8')) as Profile;

const maps = new Map<string, SourceMap | undefined>();
function sourceMapOf(url: string): SourceMap | undefined {
  if (!values.bundle || !url) return undefined;
  if (!maps.has(url)) {
    // The bundle was elsewhere when profiled: its files are found by their path under its folder.
    const parts = url.replace(/^file:\/\//, '').split('/');
    const found = parts
      .map((_, i) => join(values.bundle as string, ...parts.slice(i)))
      .find((path) => existsSync(`${path}.map`));
    maps.set(url, found ? new SourceMap(JSON.parse(readFileSync(`${found}.map`, 'utf8'))) : undefined);
  }
  return maps.get(url);
}

/**
 * The frame as written: its function, and the file (from `--root`, or from node_modules) and line it
 * was written at, mapped through the bundle's source map; the frame as it is when there is none.
 */
function sourceFrame(frame: CallFrame): CallFrame {
  const entry = sourceMapOf(frame.url)?.findEntry(frame.lineNumber, frame.columnNumber);
  if (!entry || !('originalSource' in entry) || !entry.originalSource) return frame;
  // The map's sources are relative to the bundle where it was when profiled.
  const source = resolve(dirname(frame.url.replace(/^file:\/\//, '')), entry.originalSource);
  const url = source.includes('/node_modules/')
    ? source.slice(source.lastIndexOf('node_modules/'))
    : relative(values.root, source);
  return { ...frame, url, lineNumber: entry.originalLine, columnNumber: entry.originalColumn };
}

function frameName(frame: CallFrame): string {
  const { functionName, url, lineNumber } = sourceFrame(frame);
  const name = functionName || '(anonymous)';
  return url ? `${name} ${url.replace(/^file:\/\//, '')}:${lineNumber + 1}` : name;
}

// Each sample's time is the delta to the next one; a node's self time is the sum over its samples.
const self = new Map<number, number>();
profile.samples.forEach((id, i) => {
  const delta = profile.timeDeltas[i + 1] ?? 0;
  self.set(id, (self.get(id) ?? 0) + delta);
});
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const total = profile.endTime - profile.startTime;

const selfByName = new Map<string, number>();
const totalByName = new Map<string, number>();
/** Each function's total counts a recursive call once: `onStack` holds the names above this node. */
function walk(id: number, onStack: Set<string>): number {
  const node = byId.get(id) as ProfileNode;
  const name = frameName(node.callFrame);
  let sum = self.get(id) ?? 0;
  selfByName.set(name, (selfByName.get(name) ?? 0) + sum);
  const entered = !onStack.has(name);
  if (entered) onStack.add(name);
  for (const child of node.children ?? []) sum += walk(child, onStack);
  if (entered) {
    onStack.delete(name);
    totalByName.set(name, (totalByName.get(name) ?? 0) + sum);
  }
  return sum;
}
walk(profile.nodes[0]?.id as number, new Set());

const top = Number(values.top);
const ms = (us: number) => (us / 1000).toFixed(0).padStart(7);
const share = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
const busy = total - (selfByName.get('(idle)') ?? 0);
console.log(`profile ${basename(file)}: ${ms(total)} ms in all, ${ms(busy)} ms not idle`);
/** V8's own entries, not functions: shown first, apart. */
const SPECIAL = ['(idle)', '(garbage collector)', '(program)', '(root)'];
for (const special of SPECIAL.slice(0, 3)) {
  const us = selfByName.get(special) ?? 0;
  console.log(`  ${special.padEnd(22)} ${ms(us)} ms ${share(us)}`);
}
const sorted = (by: Map<string, number>) =>
  [...by].filter(([name]) => !SPECIAL.includes(name)).sort((a, b) => b[1] - a[1]);
console.log(`\nself time, top ${top}:`);
for (const [name, us] of sorted(selfByName).slice(0, top))
  console.log(`  ${ms(us)} ms ${share(us)}  ${name}`);
const selfByFile = new Map<string, number>();
for (const [name, us] of selfByName) {
  const file = SPECIAL.includes(name) ? name : (name.split(' ').at(-1)?.replace(/:\d+$/, '') ?? name);
  selfByFile.set(file, (selfByFile.get(file) ?? 0) + us);
}
console.log(`\nself time by file, top ${top}:`);
for (const [file, us] of sorted(selfByFile).slice(0, top))
  console.log(`  ${ms(us)} ms ${share(us)}  ${file}`);
console.log(`\ntotal time (self and callees), top ${top}:`);
for (const [name, us] of sorted(totalByName).slice(0, top))
  console.log(`  ${ms(us)} ms ${share(us)}  ${name}`);

if (values.write) {
  const nodes = profile.nodes.map((node) => ({ ...node, callFrame: sourceFrame(node.callFrame) }));
  writeFileSync(values.write, gzipSync(JSON.stringify({ ...profile, nodes })));
  console.log(`\nwritten, its frames mapped: ${values.write}`);
}
