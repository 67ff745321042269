/**
 * The layers import one way: protocol ← functions, protocol ← webhooks ← gateway. functions/ and
 * protocol/ must also run on Workers, so they may not touch Node built-ins or Node-only packages.
 * testing/ is public: it reaches the gateway only through gateway/index.ts, as its users do. What runs
 * outside the tests (gateway/, and deploy/, whose control plane `npm start` starts) imports neither
 * test/ nor bench/. bench/ measures the package through its public entries, and what it measures
 * beneath them through one seam, gateway/internals.ts, which nothing else imports.
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
  // OpenTelemetry's SDK, which a Node process registers: the SDK's spans use only @opentelemetry/api.
  '@opentelemetry/context-async-hooks',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/resources',
  '@opentelemetry/sdk-trace',
];

interface Rule {
  layer: string;
  forbidden: Array<{ test: (specifier: string, file: string) => boolean; why: string }>;
}

/** Where a relative import lands, from the repository's root. */
const targetOf = (specifier: string, file: string) => relative(ROOT, join(file, '..', specifier));
/** The top-level folder an import lands in: by a relative path, or by a causeway/<folder> entry. */
function folderOf(specifier: string, file: string): string | undefined {
  if (specifier.startsWith('.')) return targetOf(specifier, file).split('/')[0];
  return /^causeway\/([^/]+)/.exec(specifier)?.[1];
}
const nodeBuiltin = { test: (specifier: string) => specifier.startsWith('node:'), why: 'a Node built-in' };
const nodeOnly = {
  test: (specifier: string) => NODE_ONLY_PACKAGES.includes(specifier),
  why: 'a Node-only package',
};
const layer = (folder: string) => ({
  test: (specifier: string, file: string) => folderOf(specifier, file) === folder,
  why: `${folder}/`,
});
/** Any folder of the repository but these; packages and Node built-ins stay allowed. */
const outside = (...allowed: string[]) => ({
  test: (specifier: string, file: string) => {
    const folder = folderOf(specifier, file);
    return folder !== undefined && !allowed.includes(folder);
  },
  why: `outside ${allowed.map((folder) => `${folder}/`).join(', ')}`,
});
const PUBLIC_ENTRIES = ['functions/index.ts', 'gateway/index.ts', 'protocol/index.ts', 'testing/index.ts'];
const INTERNALS_SEAM = 'gateway/internals.ts';
const internalsSeam = {
  test: (specifier: string, file: string) =>
    specifier.startsWith('.') && targetOf(specifier, file) === INTERNALS_SEAM,
  why: `${INTERNALS_SEAM}, bench/'s seam`,
};
/**
 * Any file of the repository but the public entries (by path or as `causeway/<entry>`) and `files`, or
 * those in `folders`; packages and Node built-ins stay allowed.
 */
const beyondEntries = (files: string[], folders: string[]) => ({
  test: (specifier: string, file: string) => {
    if (!specifier.startsWith('.')) {
      const entry = /^causeway\/(.+)$/.exec(specifier)?.[1];
      return entry !== undefined && !PUBLIC_ENTRIES.includes(`${entry}/index.ts`);
    }
    const target = targetOf(specifier, file);
    return (
      !PUBLIC_ENTRIES.includes(target) &&
      !files.includes(target) &&
      !folders.some((folder) => target.startsWith(`${folder}/`))
    );
  },
  why: `beyond the public entries, ${[...files, ...folders.map((folder) => `${folder}/`)].join(', ')}`,
});
const gatewayInternals = {
  test: (specifier: string, file: string) =>
    specifier.startsWith('.') &&
    targetOf(specifier, file).startsWith('gateway/') &&
    targetOf(specifier, file) !== 'gateway/index.ts',
  why: 'gateway/ internals: only its public entry, gateway/index.ts',
};

const RULES: Rule[] = [
  {
    layer: 'protocol',
    forbidden: [nodeBuiltin, nodeOnly, layer('functions'), layer('gateway'), layer('webhooks')],
  },
  { layer: 'functions', forbidden: [nodeBuiltin, nodeOnly, layer('gateway'), layer('webhooks')] },
  { layer: 'webhooks', forbidden: [outside('webhooks', 'protocol')] },
  { layer: 'gateway', forbidden: [layer('test'), layer('bench'), internalsSeam] },
  {
    layer: 'testing',
    forbidden: [outside('testing', 'protocol', 'functions', 'gateway'), gatewayInternals],
  },
  { layer: 'deploy', forbidden: [layer('test'), layer('bench'), internalsSeam] },
  {
    layer: 'bench',
    forbidden: [
      // The seam; what runs the contenders (the CLI bundled as published, the local control plane);
      // the tests' private cluster and fault injectors; the package installed as users get it (startup).
      beyondEntries(
        [INTERNALS_SEAM, 'deploy/build.ts', 'deploy/control-plane/index.ts', 'test/package/project.ts'],
        ['bench', 'test/support'],
      ),
    ],
  },
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
