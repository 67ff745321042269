import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { cachedBinary, contentKey } from './cached-binary.ts';
import { silent } from './progress.ts';

const scratch = await mkdtemp(join(tmpdir(), 'causeway-cached-binary-'));
after(() => rm(scratch, { recursive: true, force: true }));

/** A directory of sources: `files` by path. */
async function sources(name: string, files: Record<string, string>): Promise<string> {
  const dir = join(scratch, name);
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  return dir;
}

describe('contentKey', () => {
  it('is the same for the same files wherever they are, and changes with any edit', async () => {
    const files = { 'main.go': 'package main\n', 'go.mod': 'module a\n', 'cmd/tool.go': 'package cmd\n' };
    const key = await contentKey(await sources('a', files));
    assert.match(key, /^[0-9a-f]{16}$/);
    assert.equal(await contentKey(await sources('b', files)), key);
    const edited = await contentKey(await sources('c', { ...files, 'main.go': 'package main // \n' }));
    const added = await contentKey(await sources('d', { ...files, 'go.sum': '' }));
    const renamed = await contentKey(
      await sources('e', {
        'main.go': files['main.go'],
        'go.mod': files['go.mod'],
        'tool.go': 'package cmd\n',
      }),
    );
    assert.equal(new Set([key, edited, added, renamed]).size, 4);
  });

  it('tells apart a content moved from one file to the next', async () => {
    const one = await contentKey(await sources('f', { a: 'xy', b: '' }));
    const other = await contentKey(await sources('g', { a: 'x', b: 'y' }));
    assert.notEqual(one, other);
  });
});

/** A build of `tool` that makes a script in its work directory, counting its calls. */
function toolBuild() {
  const build = {
    name: 'tool',
    from: 'tool from nowhere',
    builds: 0,
    async make({ workDir }: { workDir: string }) {
      build.builds++;
      const built = join(workDir, 'tool');
      await writeFile(built, '#!/bin/sh\n');
      await chmod(built, 0o755);
      return built;
    },
    onProgress: silent,
  };
  return build;
}

describe('cachedBinary', () => {
  it('builds once and publishes the binary in bin/; later calls, however many at once, find it', async () => {
    const root = join(scratch, 'cache');
    const build = toolBuild();
    const binaries = await Promise.all([1, 2, 3].map(() => cachedBinary(root, 'tool', build)));
    assert.deepEqual(binaries, Array(3).fill(join(root, 'bin', 'tool')));
    assert.equal(await cachedBinary(root, 'tool', build), join(root, 'bin', 'tool'));
    assert.equal(build.builds, 1);
    assert.equal(await readFile(join(root, 'bin', 'tool'), 'utf8'), '#!/bin/sh\n');
  });

  it('publishes nothing when the build fails, and builds again next time', async () => {
    const root = join(scratch, 'failing');
    const failing = {
      ...toolBuild(),
      make: () => Promise.reject(new Error('no compiler')),
    };
    await assert.rejects(cachedBinary(root, 'tool', failing), /no compiler/);
    assert.deepEqual(await readdir(join(root, 'bin')), []);
    const build = toolBuild();
    assert.equal(await cachedBinary(root, 'tool', build), join(root, 'bin', 'tool'));
    assert.equal(build.builds, 1);
  });
});
