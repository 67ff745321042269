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

/**
 * Inside gateway/, each folder's rank: a module imports only from ranks at or below its own, and the
 * engines (what one resource runs, what serves the function services, admission, peering) never
 * import each other: they plug into the manager and the reactor beside one another. The root's
 * shared files (logging, settings, identity, timing...) are rank 0; its composition (gateway.ts,
 * options.ts, index.ts, and internals.ts, bench/'s seam) ranks with modules/.
 */
const GATEWAY_RANKS: Record<string, number> = {
  '.': 0,
  tracing: 0,
  state: 1,
  kube: 2,
  watching: 3,
  dispatch: 3,
  reactor: 4,
  manager: 5,
  resource: 6,
  services: 6,
  admission: 6,
  peering: 6,
  binding: 7,
  health: 7,
  metrics: 7,
  rbac: 8,
  modules: 9,
  cli: 10,
  explain: 10,
  conformance: 10,
};
const ENGINES = ['resource', 'services', 'admission', 'peering'];
const COMPOSITION = ['gateway/gateway.ts', 'gateway/options.ts', 'gateway/index.ts', 'gateway/internals.ts'];
/** The reactor's pure steps: they decide, and reach the API only through reactor/api.ts. */
const PURE_REACTOR = [
  'model',
  'causes',
  'plan',
  'outcomes',
  'write-plan',
  'filters',
  'finalizers',
  'reconcile',
  'memory',
  'places',
];

/** The folder of gateway/ a file is in (`.` for the root's files), or undefined outside gateway/. */
function gatewayFolderOf(path: string): string | undefined {
  const parts = path.split('/');
  if (parts[0] !== 'gateway') return undefined;
  return parts.length === 2 ? '.' : parts[1];
}

function rankOf(path: string): number {
  if (COMPOSITION.includes(path)) return GATEWAY_RANKS.modules as number;
  const rank = GATEWAY_RANKS[gatewayFolderOf(path) as string];
  if (rank === undefined) throw new Error(`${path}: its folder has no rank in GATEWAY_RANKS`);
  return rank;
}

/** What a gateway/ file imports against the ranks: upward, from a sibling engine, or kube/ from a pure step. */
export function gatewayViolations(file: string, source: string): string[] {
  const from = relative(ROOT, file);
  const violations: string[] = [];
  for (const match of source.matchAll(/^(import|export)(\s+type)?\s[^'"]*?from\s*['"](\.[^'"]+)['"]/gm)) {
    const to = targetOf(match[3] as string, file);
    if (gatewayFolderOf(to) === undefined) continue;
    const [fromFolder, toFolder] = [gatewayFolderOf(from), gatewayFolderOf(to)];
    if (rankOf(to) > rankOf(from)) violations.push(`${from} imports ${to}, of a higher rank`);
    else if (
      fromFolder !== toFolder &&
      ENGINES.includes(fromFolder as string) &&
      ENGINES.includes(toFolder as string)
    ) {
      violations.push(`${from} imports ${to}: engines do not import each other`);
    }
    const pure =
      fromFolder === 'reactor' && PURE_REACTOR.some((name) => from === `gateway/reactor/${name}.ts`);
    if (pure && toFolder === 'kube' && !match[2])
      violations.push(`${from} imports ${to}: a pure step does no I/O`);
  }
  return violations;
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

  it('inside gateway/, imports go down the ranks, engines stay apart and the pure steps do no I/O', () => {
    const violations = sourceFiles('gateway').flatMap((file) =>
      gatewayViolations(file, readFileSync(file, 'utf8')),
    );
    assert.deepEqual(violations, []);
  });

  it('refuses an upward import, one between engines and kube I/O in a pure step', () => {
    const at = (path: string) => join(ROOT, path);
    assert.deepEqual(
      gatewayViolations(at('gateway/dispatch/calls.ts'), "import { x } from '../resource/timers.ts';"),
      ['gateway/dispatch/calls.ts imports gateway/resource/timers.ts, of a higher rank'],
    );
    assert.deepEqual(
      gatewayViolations(at('gateway/services/login.ts'), "import { x } from '../admission/host.ts';"),
      ['gateway/services/login.ts imports gateway/admission/host.ts: engines do not import each other'],
    );
    assert.deepEqual(
      gatewayViolations(at('gateway/reactor/plan.ts'), "import { get } from '../kube/client.ts';"),
      ['gateway/reactor/plan.ts imports gateway/kube/client.ts: a pure step does no I/O'],
    );
    assert.deepEqual(
      gatewayViolations(
        at('gateway/reactor/plan.ts'),
        "import type { KubeClient } from '../kube/client.ts';",
      ),
      [],
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
