/** `causeway rbac` as users run it, and its output taken apart, for the tests of the RBAC it prints. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { type Manifest, type PolicyRule, parseYaml } from './kubectl.ts';
import { CAUSEWAY_CLI } from './processes.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

/** This process's environment without CAUSEWAY_SECRET: nothing to sign or verify with but what a command is given. */
export const withoutSecret: NodeJS.ProcessEnv = (() => {
  const { CAUSEWAY_SECRET: _unset, ...rest } = process.env;
  return rest;
})();

/** The objects `causeway rbac` with `args` prints (its log goes to stderr). */
export async function rbacObjects(args: string[]): Promise<Manifest[]> {
  const run = promisify(execFile);
  const { stdout } = await run(process.execPath, [CAUSEWAY_CLI, 'rbac', ...args], {
    cwd: ROOT,
    env: withoutSecret,
  });
  return parseYaml(stdout);
}

/** `objects` with the one rule of their `kind` that `matches` taken out; fails unless exactly one matches. */
export function withoutRule(
  objects: Manifest[],
  kind: 'Role' | 'ClusterRole',
  matches: (rule: PolicyRule) => boolean,
): Manifest[] {
  const role = objects.find((object) => object.kind === kind);
  assert.ok(role, `a ${kind} among ${objects.map((object) => object.kind).join(', ')}`);
  const rules = (role.rules as PolicyRule[] | undefined) ?? [];
  const kept = rules.filter((rule) => !matches(rule));
  assert.equal(kept.length, rules.length - 1, `one rule of the ${kind} to remove: ${JSON.stringify(rules)}`);
  return objects.map((object) => (object === role ? { ...role, rules: kept } : object));
}

/**
 * The apiserver's refusal of `verb` on `resource` (each a pattern), as the gateway logs it, its quotes
 * escaped in a JSON line: that rule, not another, was lacking.
 */
export function refusal(verb: string, resource: string): RegExp {
  return new RegExp(`cannot ${verb} resource \\\\?"${resource}\\\\?"`);
}
