/**
 * `causeway init <directory>`: a new operator project, copied from template/ — itself a working
 * project named my-operator — with the directory's name in place of my-operator.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import packageJson from '../../../../package.json' with { type: 'json' };

export interface InitOptions {
  /** The `causeway` dependency: a version range (default ^ this version), or a path to a tarball or directory. */
  causeway?: string;
}

const TEMPLATE = fileURLToPath(new URL('./template/', import.meta.url));
const TEMPLATE_NAME = 'my-operator';

/** npm pack drops .gitignore files, so the template keeps them under another name. */
const RENAMED: Readonly<Record<string, string>> = { gitignore: '.gitignore' };

// The name becomes the Service `<name>-functions`: a DNS-1035 label (it starts with a letter) of at
// most 63 characters, as are the label values that hold it.
const LONGEST_SUFFIX = '-functions';
const MAX_NAME_LENGTH = 63 - LONGEST_SUFFIX.length;
const NAME = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** What npm takes for a path rather than a version range: ./x, ../x, /x, or a tarball's name. */
const PATH_SPEC = /^\.{0,2}\/|\.(tgz|tar\.gz|tar)$/;

/** Creates the project in `directory`; returns the files written, relative to it, sorted. */
export async function init(directory: string, options: InitOptions = {}): Promise<string[]> {
  const target = resolve(directory);
  const name = basename(target);
  if (!NAME.test(name) || name.length > MAX_NAME_LENGTH) {
    throw new Error(
      `"${name}" cannot name a project: use lowercase letters, digits and "-", a letter first, a letter ` +
        `or digit last, at most ${MAX_NAME_LENGTH} characters (the directory's name becomes the ` +
        `operator's, its API group's and its Kubernetes objects')`,
    );
  }
  await refuseNonEmpty(target, directory);

  const written: string[] = [];
  for (const file of await templateFiles()) {
    const path = join(dirname(file), RENAMED[basename(file)] ?? basename(file));
    const text = await readFile(join(TEMPLATE, file), 'utf8');
    await mkdir(dirname(join(target, path)), { recursive: true });
    await writeFile(join(target, path), text.replaceAll(TEMPLATE_NAME, name));
    written.push(path);
  }
  // Not a template file: a package.json inside Causeway's repository would change how its modules resolve.
  await writeFile(
    join(target, 'package.json'),
    `${JSON.stringify(projectPackage(name, target, options), null, 2)}\n`,
  );
  written.push('package.json');
  return written.sort();
}

async function refuseNonEmpty(target: string, directory: string): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(target);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return;
    if (code === 'ENOTDIR') throw new Error(`${directory} exists and is not a directory`);
    throw error;
  }
  if (entries.length > 0) {
    throw new Error(`${directory} already exists and is not empty: give a new directory, or an empty one`);
  }
}

async function templateFiles(): Promise<string[]> {
  const entries = await readdir(TEMPLATE, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(TEMPLATE, join(entry.parentPath, entry.name)));
}

function projectPackage(name: string, target: string, options: InitOptions) {
  const { devDependencies } = packageJson;
  return {
    name,
    version: '0.1.0',
    private: true,
    type: 'module',
    engines: { node: packageJson.engines.node },
    scripts: {
      start: 'causeway run operator.ts --namespace default',
      dev: 'causeway dev operator.ts --namespace default',
      test: 'node --test "*.test.ts"',
      build: 'tsc',
    },
    dependencies: { causeway: causewaySpec(options.causeway, target) },
    devDependencies: {
      '@types/node': `^${devDependencies['@types/node']}`,
      typescript: `^${devDependencies.typescript}`,
    },
  };
}

/**
 * npm reads a relative path in package.json from the project's directory, while the user wrote it
 * from the current one: such paths are made relative to the project.
 */
function causewaySpec(spec: string | undefined, target: string): string {
  if (spec === undefined) return `^${packageJson.version}`;
  if (!spec.startsWith('file:') && !PATH_SPEC.test(spec)) return spec;
  const path = spec.replace(/^file:/, '');
  return `file:${isAbsolute(path) ? path : relative(target, resolve(path))}`;
}
