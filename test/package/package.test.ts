/**
 * Causeway as users get it: the tarball `npm pack` makes, installed with npm into a project of their
 * own outside the repository, and used there the way the README says.
 */
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import repository from '../../package.json' with { type: 'json' };
import type { KubernetesObject } from '../../protocol/index.ts';
import type * as Testing from '../../testing/index.ts';
import { testCluster, testNamespace } from '../support/cluster.ts';
import { helmTemplate } from '../support/helm.ts';
import { applyFile, createKopfExample, eventually, kubeClient } from '../support/operator.ts';
import { startCli } from '../support/processes.ts';
import { serveWorker } from '../support/workerd.ts';
import {
  lockedVersions,
  npmInitProject,
  npmInstall,
  packedTarball,
  projectDirectory,
  runIn,
  runOk,
  userEnvironment,
  userProject,
} from './project.ts';

const TSC = new URL('../../node_modules/.bin/tsc', import.meta.url).pathname;
const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const REPO = fileURLToPath(new URL('../../', import.meta.url));
/** The Helm chart, published for `helm install … node_modules/causeway/deploy/helm/causeway`. */
const CHART = 'deploy/helm/causeway';

/** A user's operator, as the README shows it; `{{name}}` is the operator's name. */
const TYPESCRIPT_OPERATOR = `import { operator } from 'causeway/functions';

interface Spec {
  field: string;
}

const op = operator({ name: '{{name}}' });

op.on.create<Spec>('kopfexamples', async function create_fn({ spec, name, logger }) {
  logger.info(\`creating \${name}\`);
  return { message: \`hello \${name}\`, field: spec.field, from: '{{name}}' };
});

export default op;
`;

const JAVASCRIPT_OPERATOR = `import { operator } from 'causeway/functions';

const op = operator({ name: 'js-operator' });

op.on.create('kopfexamples', async function create_fn({ spec, name }) {
  return { message: \`hello \${name}\`, field: spec.field, from: 'js-operator' };
});

export default op;
`;

const ADMISSION_OPERATOR = `import { AdmissionError, operator } from 'causeway/functions';

const op = operator({ name: 'admission-operator' });

op.on.validate('kopfexamples', function no_forbidden({ spec }) {
  if (spec.field === 'forbidden') throw new AdmissionError('no', 422);
});

export default op;
`;

/** A test of the operator that uses every other export, to typecheck them all. */
const USER_TEST = `import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { GatewayOptions } from 'causeway/gateway';
import type { KubernetesObject } from 'causeway/protocol';
import { callHandlers } from 'causeway/testing';
import op from './typed.ts';

const body: KubernetesObject = {
  apiVersion: 'kopf.dev/v1',
  kind: 'KopfExample',
  metadata: { name: 'kex-1', uid: 'uid-1' },
  spec: { field: 'x' },
};
const options: Partial<GatewayOptions> = { settings: { processing: { concurrency: 4 } } };

test('create_fn', async () => {
  const { outcomes } = await callHandlers(op, { reason: 'create', body });
  assert.equal(outcomes.create_fn?.status, 'success');
  assert.equal(options.settings?.processing?.concurrency, 4);
});
`;

/**
 * As \`tsc --init\` and causeway init make it. skipLibCheck, because client-node's declarations (under
 * causeway/gateway and causeway/testing) need @types/ws, which client-node does not depend on.
 */
const USER_TSCONFIG = {
  compilerOptions: {
    target: 'es2024',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    strict: true,
    noEmit: true,
    allowImportingTsExtensions: true,
    skipLibCheck: true,
    types: ['node'],
  },
  include: ['typed.ts', 'typed.test.ts'],
};

/**
 * Runs `source`, written to `file` in `project`, with `npx causeway run`, as the README says: it
 * handles an object in the cluster, and stops cleanly.
 */
async function runsOperator(t: TestContext, project: string, file: string, source: string, name: string) {
  await applyFile(CRD);
  const namespace = await testNamespace(t);
  await writeFile(join(project, file), source);
  const { kubeconfigPath } = await testCluster();
  const operatorProcess = startCli(
    'npx',
    ['causeway', 'run', file, '--namespace', namespace],
    userEnvironment({ KUBECONFIG: kubeconfigPath }),
    project,
  );
  t.after(() => operatorProcess.stop('SIGKILL'));
  const client = await kubeClient();
  const path = await createKopfExample(namespace, 'kex-1', { field: 'x' });
  const object = await eventually(
    'status.create_fn',
    async () => {
      const current = await client.get<KubernetesObject>(path);
      return current.status?.create_fn === undefined ? undefined : current;
    },
    30_000,
  );
  assert.deepEqual(object.status?.create_fn, { message: 'hello kex-1', field: 'x', from: name });
  // npx dies of the signal itself; what counts is that the operator behind it stopped cleanly.
  await operatorProcess.stop('SIGTERM');
  assert.match(
    operatorProcess.output(),
    /SIGTERM received, stopping\n.*no longer watching .*path=\/apis\/kopf\.dev/,
  );
}

describe('the package, installed into a project of its own', () => {
  let project: string;
  let remove: () => Promise<void>;
  const installed = () => join(project, 'node_modules/causeway');

  before(async () => {
    ({ dir: project, remove } = await projectDirectory());
    await userProject(project, [
      packedTarball(),
      `typescript@${repository.devDependencies.typescript}`,
      `@types/node@${repository.devDependencies['@types/node']}`,
    ]);
  });
  after(() => remove?.());

  it('holds the built library, the CLI, the Helm chart and the docs, and nothing else', async () => {
    const files = (await readdir(installed(), { recursive: true, withFileTypes: true }))
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name).slice(installed().length + 1))
      .sort();
    const outside = files.filter(
      (file) =>
        !file.startsWith('dist/') &&
        !file.startsWith(`${CHART}/`) &&
        !['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE'].includes(file),
    );
    assert.deepEqual(outside, [], 'only dist/, the Helm chart and the package docs are published');
    // The chart whole, as in the repository: what a project of `causeway init` installs with helm.
    const chartFiles = (await readdir(join(REPO, CHART), { recursive: true, withFileTypes: true }))
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name).slice(REPO.length))
      .sort();
    assert.ok(chartFiles.includes(`${CHART}/values.schema.json`));
    assert.deepEqual(
      files.filter((file) => file.startsWith(`${CHART}/`)),
      chartFiles,
    );
    assert.deepEqual(
      files.filter(
        (file) =>
          /\.test\.|fixture|\.ts$/.test(file) &&
          !file.endsWith('.d.ts') &&
          !file.startsWith('dist/cli/template/'), // the project `causeway init` makes is TypeScript
      ),
      [],
      "no tests, fixtures or TypeScript sources besides causeway init's template",
    );
    const manifest = JSON.parse(await readFile(join(installed(), 'package.json'), 'utf8'));
    for (const [name, target] of Object.entries(manifest.exports as Record<string, Record<string, string>>)) {
      if (typeof target === 'string') continue;
      for (const condition of ['types', 'default']) {
        assert.ok(
          files.includes(target[condition]?.slice(2) ?? ''),
          `${name} has ${condition}: ${target[condition]}`,
        );
      }
      assert.ok(files.includes(`${target.default?.slice(2)}.map`), `${name} has a source map`);
    }
    assert.ok(files.includes(manifest.bin.causeway.slice(2)), 'the bin is there');
  });

  it("installs causeway's dependencies at the versions of the repository's lock", async () => {
    const locked = await lockedVersions();
    // npm's record of what it installed in the project.
    const { packages } = JSON.parse(
      await readFile(join(project, 'node_modules/.package-lock.json'), 'utf8'),
    ) as { packages: Record<string, { version: string }> };
    const installedVersions = Object.entries(packages).map(([path, { version }]) => [
      path.split('node_modules/').at(-1) as string,
      version,
    ]);
    for (const name of Object.keys(repository.dependencies)) {
      assert.ok(
        installedVersions.some(([installed]) => installed === name),
        `${name} is installed`,
      );
    }
    const differing = installedVersions.filter(
      ([name, version]) => name && locked[name] && locked[name] !== version,
    );
    assert.deepEqual(differing, []);
  });

  it('runs its CLI with npx: --version and --help', async () => {
    assert.equal((await runOk(project, 'npx', ['causeway', '--version'])).trim(), repository.version);
    assert.match(await runOk(project, 'npx', ['causeway', '--help']), /^Usage: causeway <command>/);
  });

  it('says in one line which Node it needs, on an older one', async () => {
    // The launcher reads process.versions.node; this one reports an older Node than the minimum.
    const olderNode = 'data:text/javascript,Object.defineProperty(process.versions,"node",{value:"20.19.5"})';
    const bin = join(project, 'node_modules/.bin/causeway');
    const result = await runIn(project, process.execPath, ['--import', olderNode, bin, 'run', 'operator.ts']);
    assert.equal(result.code, 1);
    assert.equal(
      result.stderr,
      'causeway: needs Node.js 22.19.0 or later, and this is 20.19.5: install a newer Node (https://nodejs.org)\n',
    );
  });

  it('says what a TypeScript operator needs from a Node that cannot strip types', async () => {
    await writeFile(join(project, 'stripped.ts'), TYPESCRIPT_OPERATOR.replaceAll('{{name}}', 'stripped'));
    const bin = join(project, 'node_modules/.bin/causeway');
    const result = await runIn(
      project,
      process.execPath,
      ['--no-experimental-strip-types', bin, 'serve', 'stripped.ts'],
      { CAUSEWAY_SECRET: 'a-secret-for-the-type-stripping-test-0123' },
    );
    assert.equal(result.code, 1);
    assert.equal(
      result.stderr,
      `causeway: cannot load stripped.ts: Unknown file extension ".ts" for ${join(project, 'stripped.ts')}: ` +
        "this Node does not strip TypeScript's types (Node 22.18+ and 23.6+ do, unless " +
        '--no-experimental-strip-types): run a newer Node, or compile the module to JavaScript\n',
    );
  });

  it('runs a TypeScript operator with npx causeway run, which handles an object in the cluster', (t) =>
    runsOperator(
      t,
      project,
      'operator.ts',
      TYPESCRIPT_OPERATOR.replaceAll('{{name}}', 'ts-operator'),
      'ts-operator',
    ));

  it('runs a JavaScript operator with npx causeway run, which handles an object in the cluster', (t) =>
    runsOperator(t, project, 'operator.js', JAVASCRIPT_OPERATOR, 'js-operator'));

  it('develops an operator with npx causeway dev: a saved change is served with no restart', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    // A folder of its own: dev reloads on changes in the module's folder, and other tests write here.
    await mkdir(join(project, 'dev'), { recursive: true });
    const version = (from: string) =>
      TYPESCRIPT_OPERATOR.replace("name: '{{name}}'", "name: 'dev-operator'").replaceAll('{{name}}', from);
    await writeFile(join(project, 'dev/operator.ts'), version('v1'));
    const { kubeconfigPath } = await testCluster();
    const dev = startCli(
      'npx',
      ['causeway', 'dev', 'dev/operator.ts', '--namespace', namespace],
      userEnvironment({ KUBECONFIG: kubeconfigPath }),
      project,
    );
    t.after(() => dev.stop('SIGKILL'));
    await dev.waitFor(/dev: serving "dev-operator"/);
    const client = await kubeClient();
    const handledBy = async (name: string) => {
      const path = await createKopfExample(namespace, name, { field: 'x' });
      const result = await eventually(
        `${name} handled`,
        async () =>
          (await client.get<KubernetesObject>(path)).status?.create_fn as { from: string } | undefined,
        30_000,
      );
      return result.from;
    };
    assert.equal(await handledBy('kex-1'), 'v1');
    await writeFile(join(project, 'dev/operator.ts'), version('v2'));
    await dev.waitFor(/dev: reloaded/);
    assert.equal(await handledBy('kex-2'), 'v2');
    assert.equal(dev.child.exitCode, null);
  });

  it('serves admission with npx causeway run, and loads the ngrok SDK from the installed dependencies', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    await writeFile(join(project, 'admission.js'), ADMISSION_OPERATOR);
    const { kubeconfigPath } = await testCluster();
    const run = (args: string[], env: Record<string, string> = {}) =>
      startCli(
        'npx',
        ['causeway', 'run', 'admission.js', '--namespace', namespace, ...args],
        userEnvironment({ KUBECONFIG: kubeconfigPath, ...env }),
        project,
      );
    const local = run([]);
    t.after(() => local.stop('SIGKILL'));
    await local.waitFor(/the apiserver reaches them at https:\/\/127\.0\.0\.1:\d+/);
    await local.stop('SIGTERM');

    const tunnelled = run(['--webhook-reach', 'ngrok'], { NGROK_AUTHTOKEN: 'not-a-real-token' });
    t.after(() => tunnelled.stop('SIGKILL'));
    assert.notEqual(await tunnelled.exited(), 0);
    assert.match(tunnelled.output(), /the ngrok tunnel could not open/);
  });

  it("typechecks a user's operator and its test against the published types, and catches a misspelt argument", async () => {
    await writeFile(join(project, 'tsconfig.json'), JSON.stringify(USER_TSCONFIG, null, 2));
    await writeFile(join(project, 'typed.ts'), TYPESCRIPT_OPERATOR.replaceAll('{{name}}', 'typed'));
    await writeFile(join(project, 'typed.test.ts'), USER_TEST);
    assert.equal((await runIn(project, TSC, ['-p', '.'])).stdout, '', 'the operator and its test typecheck');

    await writeFile(
      join(project, 'typed.ts'),
      TYPESCRIPT_OPERATOR.replaceAll('{{name}}', 'typed')
        .replace('{ spec, name, logger }', '{ spec, nmae, logger }')
        .replace('field: spec.field', 'field: spec.feild'),
    );
    const misspelt = await runIn(project, TSC, ['-p', '.']);
    assert.notEqual(misspelt.code, 0);
    assert.match(
      misspelt.stdout,
      /typed\.ts\(\d+,\d+\): error TS2339: Property 'nmae' does not exist on type/,
    );
    assert.match(
      misspelt.stdout,
      /typed\.ts\(\d+,\d+\): error TS2551: Property 'feild' does not exist on type/,
    );
  });

  it('builds an operator for Workers with npx causeway build, whose bundle answers a signed call in workerd', async () => {
    await writeFile(join(project, 'worker.ts'), TYPESCRIPT_OPERATOR.replaceAll('{{name}}', 'on-workers'));
    await runOk(project, 'npx', [
      'causeway',
      'build',
      '--target',
      'workers',
      'worker.ts',
      '--out',
      'workers',
    ]);
    const wranglerToml = await readFile(join(project, 'workers/wrangler.toml'), 'utf8');
    assert.match(wranglerToml, /^name = "worker"$/m);
    assert.match(wranglerToml, /^# {3}wrangler secret put CAUSEWAY_SECRET$/m, 'no --jwks-url: a secret');
    const secret = 'the-workers-secret-of-the-package-test';
    // What `wrangler secret put CAUSEWAY_SECRET` binds.
    const worker = await serveWorker(await readFile(join(project, 'workers/worker.mjs'), 'utf8'), {
      bindings: { CAUSEWAY_SECRET: secret },
      compatibilityDate: /^compatibility_date = "(.+)"$/m.exec(wranglerToml)?.[1] as string,
    });
    after(() => worker.close());
    // The installed testing kit signs the call, as the gateway would.
    const testing: typeof Testing = await import(join(installed(), 'dist/testing/index.js'));
    const response = await testing.callHandlers(worker, {
      reason: 'create',
      secret,
      body: {
        apiVersion: 'kopf.dev/v1',
        kind: 'KopfExample',
        metadata: { name: 'kex-9', namespace: 'default', uid: 'uid-9' },
        spec: { field: 'y' },
      },
    });
    assert.deepEqual(response.outcomes, {
      create_fn: { status: 'success', result: { message: 'hello kex-9', field: 'y', from: 'on-workers' } },
    });
    assert.deepEqual(
      response.logs.map(({ level, message }) => [level, message]),
      [['info', 'creating kex-9']],
    );
  });

  it('builds an operator for Node with npx causeway build, which node serves from a folder with nothing installed', async (t) => {
    await writeFile(join(project, 'service.ts'), TYPESCRIPT_OPERATOR.replaceAll('{{name}}', 'on-node'));
    const { dir: image, remove } = await projectDirectory();
    t.after(remove);
    await runOk(project, 'npx', ['causeway', 'build', '--target', 'node', 'service.ts', '--out', image]);
    const service = startCli(
      process.execPath,
      ['service.mjs'],
      { PORT: '0', HOST: '127.0.0.1', CAUSEWAY_SECRET: 'the-node-secret-of-the-package-test-0123' },
      image,
    );
    t.after(() => service.stop('SIGKILL'));
    const [, url] = (await service.waitFor(/function service listening on (http:\/\/\S+)/)) as [
      string,
      string,
    ];
    const health = await fetch(`${url}/healthz`);
    assert.equal(health.status, 200);
    assert.equal(((await health.json()) as { name: string }).name, 'on-node');
  });

  it('scaffolds a project with causeway init that installs, passes its own tests, builds, renders its Helm values with the packaged chart, and runs in the cluster', async (t) => {
    const { dir, remove } = await projectDirectory();
    t.after(remove);
    const created = await runOk(dir, join(project, 'node_modules/.bin/causeway'), [
      'init',
      'greeter',
      '--causeway',
      packedTarball(),
    ]);
    assert.match(created, /cd greeter && npm install && npm test/);
    const generated = join(dir, 'greeter');
    await npmInstall(generated);
    const tests = await runIn(generated, 'npm', ['test']);
    assert.equal(tests.code, 0, `its npm test passes:\n${tests.stdout}${tests.stderr}`);
    assert.match(`${tests.stdout}${tests.stderr}`, /^ℹ pass 1$/m);
    await runOk(generated, 'npm', ['run', 'build']);

    // Its values for the Helm chart, with the chart the installed package holds, as its README says:
    // released in the gateway's own namespace, serving the project's.
    const rendered = await helmTemplate(
      'greeter',
      join(generated, 'node_modules/causeway/deploy/helm/causeway'),
      'greeter-system',
      [join(generated, 'deploy/helm/values.yaml')],
    );
    assert.deepEqual(
      rendered
        .filter((object) => object.kind === 'Deployment')
        .map((object) => object.metadata.name)
        .sort(),
      ['causeway-gateway', 'greeter-functions'],
    );

    // As its README says: the CRD, the operator (here the JavaScript the build made), the example.
    await applyFile(pathToFileURL(join(generated, 'crd.yaml')));
    const namespace = await testNamespace(t);
    const { kubeconfigPath } = await testCluster();
    const operatorProcess = startCli(
      'npx',
      ['causeway', 'run', 'dist/operator.js', '--namespace', namespace],
      userEnvironment({ KUBECONFIG: kubeconfigPath }),
      generated,
    );
    t.after(() => operatorProcess.stop('SIGKILL'));
    await applyFile(pathToFileURL(join(generated, 'example.yaml')), namespace);
    const client = await kubeClient();
    const greeted = await eventually(
      'status.create_fn of example-1',
      async () => {
        const object = await client.get<KubernetesObject>(
          `/apis/greeter.example.com/v1/namespaces/${namespace}/examples/example-1`,
        );
        return object.status?.create_fn;
      },
      30_000,
    );
    assert.deepEqual(greeted, { message: 'Hello, example-1!' });
  });
});

/** An operator in a CommonJS package, as the README writes it: module syntax, a helper of its own. */
const GREETING = `export function greeting(name: string): string {
  return \`hello \${name}\`;
}
`;
/** A CommonJS file of the same project, which stays CommonJS. */
const LEGACY = `module.exports = { from: 'commonjs-project' };
`;
const COMMONJS_PROJECT_OPERATOR = `import { operator } from 'causeway/functions';
import { greeting } from './greeting.ts';
import legacy from './legacy.js';

const op = operator({ name: 'commonjs-project' });

op.on.create<{ field: string }>('kopfexamples', async function create_fn({ spec, name }) {
  return { message: greeting(name), field: spec.field, from: legacy.from };
});

export default op;
`;

describe('the package, installed into a project npm init -y makes ("type": "commonjs")', () => {
  let project: string;
  let remove: () => Promise<void>;

  before(async () => {
    ({ dir: project, remove } = await projectDirectory());
    await npmInitProject(project, [packedTarball()]);
  });
  after(() => remove?.());

  it('runs a TypeScript operator with import statements with npx causeway run, which handles an object in the cluster', async (t) => {
    assert.equal(JSON.parse(await readFile(join(project, 'package.json'), 'utf8')).type, 'commonjs');
    await writeFile(join(project, 'greeting.ts'), GREETING);
    await writeFile(join(project, 'legacy.js'), LEGACY);
    await runsOperator(t, project, 'operator.ts', COMMONJS_PROJECT_OPERATOR, 'commonjs-project');
  });
});
