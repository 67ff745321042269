import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import packageJson from '../../../../package.json' with { type: 'json' };
import { init } from './init.ts';

const MAIN = fileURLToPath(new URL('../../main.ts', import.meta.url));

const FILES = [
  '.gitignore',
  'README.md',
  'crd.yaml',
  'deploy/Dockerfile',
  'deploy/Dockerfile.dockerignore',
  'deploy/functions.yaml',
  'deploy/gateway.yaml',
  'deploy/helm/values.yaml',
  'deploy/kustomization.yaml',
  'deploy/rbac.yaml',
  'deploy/scope.yaml',
  'example.yaml',
  'operator.test.ts',
  'operator.ts',
  'package.json',
  'tsconfig.json',
];

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: { group?: string };
}

interface Kustomization {
  namespace?: string;
  images: Array<{ name: string }>;
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `causeway <args>` as a user runs it, in `cwd`. */
function causeway(cwd: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { cwd }, (error, stdout, stderr) => {
      resolve({ code: typeof error?.code === 'number' ? error.code : 0, stdout, stderr });
    });
  });
}

async function readYaml<T = Manifest>(path: string): Promise<T[]> {
  return parseAllDocuments(await readFile(path, 'utf8')).map((document) => document.toJS() as T);
}

describe('causeway init', () => {
  let parent: string;
  before(async () => {
    parent = await mkdtemp(join(tmpdir(), 'causeway-init-'));
  });
  after(() => rm(parent, { recursive: true, force: true }));

  it('writes the project, with its name in place of my-operator everywhere', async () => {
    const project = join(parent, 'acme-widgets');
    assert.deepEqual(await init(project), FILES);

    for (const file of FILES) {
      assert.doesNotMatch(await readFile(join(project, file), 'utf8'), /my-operator/, file);
    }
    assert.equal(await readFile(join(project, '.gitignore'), 'utf8'), 'node_modules/\ndist/\n');
    assert.deepEqual(JSON.parse(await readFile(join(project, 'package.json'), 'utf8')), {
      name: 'acme-widgets',
      version: '0.1.0',
      private: true,
      type: 'module',
      engines: { node: '>=22.19' },
      scripts: {
        start: 'causeway run operator.ts --namespace default',
        dev: 'causeway dev operator.ts --namespace default',
        test: 'node --test "*.test.ts"',
        build: 'tsc',
      },
      dependencies: { causeway: `^${packageJson.version}` },
      devDependencies: {
        '@types/node': `^${packageJson.devDependencies['@types/node']}`,
        typescript: `^${packageJson.devDependencies.typescript}`,
      },
    });

    const operator = await readFile(join(project, 'operator.ts'), 'utf8');
    assert.match(
      operator,
      /operator\(\{ name: 'acme-widgets', scope: \{ resources: \['examples\.acme-widgets\.example\.com'\] \} \}\)/,
    );
    assert.match(operator, /'examples\.acme-widgets\.example\.com'/);
    const [crd] = await readYaml(join(project, 'crd.yaml'));
    assert.equal(crd?.metadata.name, 'examples.acme-widgets.example.com');
    assert.equal(crd?.spec?.group, 'acme-widgets.example.com');
    const [example] = await readYaml(join(project, 'example.yaml'));
    assert.equal(example?.apiVersion, 'acme-widgets.example.com/v1');

    const [kustomization] = await readYaml<Kustomization>(join(project, 'deploy/kustomization.yaml'));
    // Each object names its namespace: the gateway's own, acme-widgets-system, but its rights on the
    // Examples of acme-widgets, the namespace it serves.
    assert.equal(kustomization?.namespace, undefined);
    assert.deepEqual(
      kustomization?.images.map((image) => image.name),
      ['acme-widgets'],
    );
    const deployed = (
      await Promise.all(
        ['gateway.yaml', 'rbac.yaml', 'functions.yaml'].map((file) =>
          readYaml(join(project, 'deploy', file)),
        ),
      )
    ).flat();
    const placed = (object: Manifest) =>
      `${object.kind}/${object.metadata.namespace ? `${object.metadata.namespace}/` : ''}${object.metadata.name}`;
    assert.deepEqual(deployed.map(placed).sort(), [
      'ClusterRole/acme-widgets-gateway',
      'ClusterRoleBinding/acme-widgets-gateway',
      'Deployment/acme-widgets-system/acme-widgets-functions',
      'Deployment/acme-widgets-system/acme-widgets-gateway',
      'PodDisruptionBudget/acme-widgets-system/acme-widgets-gateway',
      'Role/acme-widgets-system/acme-widgets-gateway',
      'Role/acme-widgets/acme-widgets', // the account the gateway writes the service's events as (--impersonate)
      'Role/acme-widgets/acme-widgets-gateway',
      'RoleBinding/acme-widgets-system/acme-widgets-gateway',
      'RoleBinding/acme-widgets/acme-widgets',
      'RoleBinding/acme-widgets/acme-widgets-gateway',
      'Service/acme-widgets-system/acme-widgets-functions',
      'ServiceAccount/acme-widgets-system/acme-widgets',
      'ServiceAccount/acme-widgets-system/acme-widgets-functions',
      'ServiceAccount/acme-widgets-system/acme-widgets-gateway',
    ]);
    assert.match(
      await readFile(join(project, 'deploy/gateway.yaml'), 'utf8'),
      /- --namespace\n\s+- acme-widgets\n/,
    );
    assert.match(
      await readFile(join(project, 'deploy/gateway.yaml'), 'utf8'),
      /- acme-widgets=https:\/\/acme-widgets-functions\.\$\(POD_NAMESPACE\)\.svc:8080 /,
    );
  });

  it('takes the causeway dependency from --causeway: a range as it is, a path from the current directory', async () => {
    const tarball = join(parent, 'causeway-0.1.0.tgz');
    const cases: Array<[given: string, project: string, expected: string]> = [
      ['~0.1.2', 'with-a-range', '~0.1.2'],
      [tarball, 'with-an-absolute-path', `file:${tarball}`],
      ['./causeway-0.1.0.tgz', 'with-a-relative-path', 'file:../causeway-0.1.0.tgz'],
      ['file:causeway-0.1.0.tgz', 'with-a-file-spec', 'file:../causeway-0.1.0.tgz'],
    ];
    await Promise.all(
      cases.map(async ([given, project, expected]) => {
        const result = await causeway(parent, ['init', project, '--causeway', given]);
        assert.equal(result.code, 0, result.stderr);
        const written = JSON.parse(await readFile(join(parent, project, 'package.json'), 'utf8'));
        assert.equal(written.dependencies.causeway, expected, given);
      }),
    );
  });

  it('says what it created and what to run next', async () => {
    const result = await causeway(parent, ['init', 'hello-op']);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(
      result.stdout,
      `Created hello-op:\n${FILES.map((file) => `  ${file}\n`).join('')}\n` +
        'Next:\n  cd hello-op && npm install && npm test\n' +
        '  kubectl apply -f crd.yaml && npm start    # runs it against the cluster of your kubeconfig\n',
    );
  });

  it('takes an empty current directory, and its name', async () => {
    const project = join(parent, 'right-here');
    await mkdir(project);
    const result = await causeway(project, ['init', '.']);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^Created right-here here:\n/);
    assert.match(result.stdout, /\nNext:\n {2}npm install && npm test\n/);
    const written = JSON.parse(await readFile(join(project, 'package.json'), 'utf8'));
    assert.equal(written.name, 'right-here');
  });

  it('refuses a directory that is not empty, and writes nothing into it', async () => {
    const project = join(parent, 'taken');
    await mkdir(project);
    await writeFile(join(project, 'notes.txt'), 'mine\n');
    const result = await causeway(parent, ['init', 'taken']);
    assert.equal(result.code, 1);
    assert.equal(
      result.stderr,
      'causeway: taken already exists and is not empty: give a new directory, or an empty one\n',
    );
    assert.equal(await readFile(join(project, 'notes.txt'), 'utf8'), 'mine\n');
    await assert.rejects(readFile(join(project, 'package.json')), { code: 'ENOENT' });
  });

  it('refuses a name that cannot name the operator and its Kubernetes objects', async () => {
    const rule =
      'use lowercase letters, digits and "-", a letter first, a letter or digit last, at most 53 characters ' +
      "(the directory's name becomes the operator's, its API group's and its Kubernetes objects')";
    await Promise.all(
      ['My_Operator', '1st-operator', 'operator-', `o${'p'.repeat(53)}`].map(async (name) => {
        const result = await causeway(parent, ['init', name]);
        assert.equal(result.code, 1, name);
        assert.equal(result.stderr, `causeway: "${name}" cannot name a project: ${rule}\n`);
      }),
    );
  });

  it('needs a directory', async () => {
    const result = await causeway(parent, ['init']);
    assert.equal(result.code, 2);
    assert.equal(
      result.stderr,
      "causeway init: needs the new project's directory, e.g. causeway init my-operator\n" +
        'Run `causeway init --help` for usage.\n',
    );
  });
});
