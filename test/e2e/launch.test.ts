/**
 * The `causeway` command as installed (dist/cli/causeway.mjs), started as users start it, with no Node
 * flags: it runs with its memory settings (gateway/cli/memory-settings.ts) in the process that was
 * started, and leaves those a user chose.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { bundleCli } from '../../deploy/build.ts';
import { testCluster, testNamespace } from '../support/cluster.ts';
import { applyFile, createKopfExample, statusOnceThere } from '../support/operator.ts';
import { type CliProcess, startCli } from '../support/processes.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const OPERATOR = new URL('../fixtures/settings-operator.ts', import.meta.url).pathname;

/** This environment without what would choose settings: the tests' hooks, and any malloc or Causeway setting. */
const {
  NODE_OPTIONS: _hooks,
  MALLOC_ARENA_MAX: _arenas,
  CAUSEWAY_MEMORY_SETTINGS: _settings,
  ...USER_ENV
} = process.env;

/** What the operator module said of its process as it loaded. */
async function reported(
  cli: CliProcess,
): Promise<{ pid: number; execArgv: string[]; MALLOC_ARENA_MAX: string | null }> {
  return JSON.parse((await cli.waitFor(/^memory settings (.+)$/m))[1] as string);
}

describe('the installed causeway command', () => {
  let dir: string;
  let causeway: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'causeway-launch-'));
    causeway = await bundleCli(join(dir, 'cli'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('started as `node causeway.mjs run`, runs with its memory settings in that same process, and stops cleanly on SIGTERM', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const { kubeconfigPath } = await testCluster();
    const run = startCli(
      process.execPath,
      [causeway, 'run', OPERATOR, '--namespace', namespace, '--standalone'],
      { ...USER_ENV, KUBECONFIG: kubeconfigPath },
    );
    t.after(() => run.stop('SIGKILL'));

    assert.deepEqual(await reported(run), {
      pid: run.child.pid,
      execArgv: ['--max-semi-space-size=4', '--heap-growing-percent=50'],
      MALLOC_ARENA_MAX: '2',
    });
    const path = await createKopfExample(namespace, 'kex-1');
    assert.deepEqual(await statusOnceThere(path, 'create_fn'), { message: 'hello kex-1' });

    // The signal to the process that was started, not to its group: there is no other process to pass it on to.
    run.child.kill('SIGTERM');
    assert.equal(await run.exited(), 0, run.output());
    assert.match(run.output(), /SIGTERM received, stopping\n.*no longer watching .*path=\/apis\/kopf\.dev/);
    assert.equal(run.output().match(/memory settings/g)?.length, 1, 'the operator module loaded once');
  });

  it('leaves the settings a user chose: a flag and a variable of their own, or none at all', async (t) => {
    const serve = (nodeFlags: string[], env: NodeJS.ProcessEnv) =>
      startCli(
        process.execPath,
        [...nodeFlags, causeway, 'serve', OPERATOR, '--host', '127.0.0.1', '--port', '0'],
        {
          ...USER_ENV,
          CAUSEWAY_SECRET: 'the-secret-of-the-launch-tests-0123456789',
          ...env,
        },
      );
    const chosen = serve(['--max-semi-space-size=16'], { MALLOC_ARENA_MAX: '4' });
    const none = serve([], { CAUSEWAY_MEMORY_SETTINGS: 'off' });
    t.after(() => Promise.all([chosen.stop('SIGKILL'), none.stop('SIGKILL')]));

    assert.deepEqual(await reported(chosen), {
      pid: chosen.child.pid,
      execArgv: ['--max-semi-space-size=16', '--heap-growing-percent=50'],
      MALLOC_ARENA_MAX: '4',
    });
    assert.deepEqual(await reported(none), { pid: none.child.pid, execArgv: [], MALLOC_ARENA_MAX: null });
    await Promise.all([chosen.waitFor(/listening on/), none.waitFor(/listening on/)]);
    assert.deepEqual(await Promise.all([chosen.stop(), none.stop()]), [0, 0]);
  });
});
