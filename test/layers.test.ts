/**
 * The layers import one way: protocol ← functions, protocol ← webhooks ← gateway. functions/ and
 * protocol/ must also run on Workers, so they may not touch Node built-ins or Node-only packages.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = new URL('..', import.meta.url).pathname;
const NODE_ONLY_PACKAGES = [
  '@hono/node-server',
  '@kubernetes/client-node',
  'undici',
  'selfsigned',
  '@ngrok/ngrok',
];

interface Rule {
  layer: string;
  forbidden: Array<{ test: (specifier: string, file: string) => boolean; why: string }>;
}

const insideOf = (specifier: string, file: string, folder: string) =>
  specifier.startsWith('.') && relative(ROOT, join(file, '..', specifier)).split('/')[0] === folder;
const nodeBuiltin = { test: (specifier: string) => specifier.startsWith('node:'), why: 'a Node built-in' };
const nodeOnly = {
  test: (specifier: string) => NODE_ONLY_PACKAGES.includes(specifier),
  why: 'a Node-only package',
};
const layer = (folder: string) => ({
  test: (specifier: string, file: string) =>
    insideOf(specifier, file, folder) || specifier.startsWith(`causeway/${folder}`),
  why: `${folder}/`,
});

const RULES: Rule[] = [
  {
    layer: 'protocol',
    forbidden: [nodeBuiltin, nodeOnly, layer('functions'), layer('gateway'), layer('webhooks')],
  },
  { layer: 'functions', forbidden: [nodeBuiltin, nodeOnly, layer('gateway'), layer('webhooks')] },
  { layer: 'webhooks', forbidden: [layer('gateway'), layer('functions')] },
];

function sourceFiles(folder: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' });
  } catch {
    return [];
  }
  return entries
    .filter((entry) => entry.endsWith('.ts') && !entry.endsWith('.test.ts') && !entry.includes('fixtures/'))
    .map((entry) => join(ROOT, folder, entry));
}

export function importsOf(source: string): string[] {
  const specifiers: string[] = [];
  const pattern =
    /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\s*\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm;
  for (const match of source.matchAll(pattern)) specifiers.push((match[1] ?? match[2] ?? match[3]) as string);
  return specifiers;
}

describe('layer boundaries', () => {
  it('finds static, dynamic and re-export imports', () => {
    assert.deepEqual(
      importsOf(
        "import a from 'x';\nexport * from './y.ts';\nconst z = await import('node:fs');\nimport 'side';",
      ),
      ['x', './y.ts', 'node:fs', 'side'],
    );
  });

  for (const rule of RULES) {
    it(`${rule.layer}/ imports nothing it must not`, () => {
      const violations: string[] = [];
      const files = sourceFiles(rule.layer);
      if (rule.layer !== 'webhooks') assert.ok(files.length > 0, `${rule.layer}/ has source files`);
      for (const file of files) {
        for (const specifier of importsOf(readFileSync(file, 'utf8'))) {
          for (const forbidden of rule.forbidden) {
            if (forbidden.test(specifier, file)) {
              violations.push(`${relative(ROOT, file)} imports ${specifier} (${forbidden.why})`);
            }
          }
        }
      }
      assert.deepEqual(violations, []);
    });
  }
});
