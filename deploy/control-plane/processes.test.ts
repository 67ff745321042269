import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { freePorts } from './ports.ts';
import { supervise } from './processes.ts';
import { waitFor } from './wait.ts';

const execFileAsync = promisify(execFile);

/** Listens on `port` and closes again; rejects (EADDRINUSE) when something holds it. */
async function listenOnce(port: number): Promise<void> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  await new Promise((resolve) => server.close(resolve));
}

async function scratch(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'causeway-processes-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function groupExists(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Processes whose parent died are reaped by init, which may take a while (or never happen, in a
 * container whose pid 1 does not reap), so these checks ignore zombies and poll.
 */
async function groupDies(pgid: number): Promise<void> {
  const living = async () => {
    const { stdout } = await execFileAsync('ps', ['-A', '-o', 'pgid=,stat=']);
    return stdout.split('\n').filter((line) => {
      const [group, stat] = line.trim().split(/\s+/);
      return Number(group) === pgid && !stat?.startsWith('Z');
    }).length;
  };
  await waitFor(`process group ${pgid} to die`, async () => ((await living()) === 0 ? true : undefined), {
    timeoutMs: 5000,
  });
}

test('stop() terminates the command and its supervisor', async (t) => {
  const dir = await scratch(t);
  const proc = await supervise('sleeper', 'sleep', ['300'], { logPath: join(dir, 'log') });
  assert.equal(proc.exit, undefined);
  const exit = await proc.stop();
  assert.equal(exit.code, 128 + 15, 'the command ends by SIGTERM and the supervisor reports it');
  assert.equal(await readFile(join(dir, 'log'), 'utf8'), '', 'the supervisor adds nothing to the log');
  assert.equal(groupExists(proc.pid), false, 'stop() leaves nothing behind, not even zombies');
  assert.equal(await proc.stop(), exit, 'stop() is idempotent');
});

test('a command that ignores SIGTERM is killed after the grace period', async (t) => {
  const dir = await scratch(t);
  const logPath = join(dir, 'log');
  const script = 'trap "" TERM; echo ignoring; while :; do sleep 1; done';
  const proc = await supervise('stubborn', 'sh', ['-c', script], { logPath, graceSeconds: 0.5 });
  await waitFor(
    'the trap to be set',
    async () => (await readFile(logPath, 'utf8')).includes('ignoring') || undefined,
    {
      timeoutMs: 5000,
    },
  );
  const started = performance.now();
  const exit = await proc.stop();
  assert.ok(performance.now() - started >= 500, 'SIGKILL comes only after the grace period');
  assert.equal(exit.signal, 'SIGKILL');
  await groupDies(proc.pid);
});

test('kill(SIGKILL) ends at once a command that ignores SIGTERM, with no grace period', async (t) => {
  const dir = await scratch(t);
  const logPath = join(dir, 'log');
  const script = 'trap "" TERM; echo ignoring; while :; do sleep 1; done';
  const proc = await supervise('crashing', 'sh', ['-c', script], { logPath, graceSeconds: 30 });
  await waitFor(
    'the trap to be set',
    async () => (await readFile(logPath, 'utf8')).includes('ignoring') || undefined,
    { timeoutMs: 5000 },
  );
  const started = performance.now();
  const exit = await proc.kill('SIGKILL');
  assert.ok(performance.now() - started < 5000, 'no grace period is waited for');
  assert.equal(exit.code, 128 + 9, 'the command ends by SIGKILL and the supervisor reports it');
  await groupDies(proc.pid);
});

test('kill(SIGKILL) resolves once the command is gone: its port can be listened on again at once', async (t) => {
  const dir = await scratch(t);
  const logPath = join(dir, 'log');
  const [port] = (await freePorts(1)) as [number];
  const listen = `require('node:net').createServer().listen(${port}, '127.0.0.1', () => console.log('listening'))`;
  // Each round kills a fresh listener; a kill that resolved before the command was gone would leave
  // the port held in some of them.
  for (let round = 0; round < 10; round++) {
    const proc = await supervise('listener', process.execPath, ['-e', listen], { logPath });
    await waitFor(
      'the listener',
      async () => (await readFile(logPath, 'utf8')).includes('listening') || undefined,
      {
        timeoutMs: 10_000,
      },
    );
    await proc.kill('SIGKILL');
    await listenOnce(port);
    await rm(logPath);
  }
});

test('a command that exits by itself is reported', async (t) => {
  const dir = await scratch(t);
  const logPath = join(dir, 'log');
  const proc = await supervise('failing', 'sh', ['-c', 'echo broken >&2; exit 3'], { logPath });
  assert.deepEqual(await proc.exited, { code: 3, signal: null });
  assert.equal(await readFile(logPath, 'utf8'), 'broken\n', 'the log holds the command output only');
});

test('nothing survives when the supervising Node process is killed with SIGKILL', async (t) => {
  const dir = await scratch(t);
  const script = `
    const { supervise } = await import(${JSON.stringify(new URL('./processes.ts', import.meta.url).href)});
    const proc = await supervise('orphan-candidate', 'sleep', ['300'], { logPath: ${JSON.stringify(join(dir, 'log'))} });
    console.log(proc.pid);
    setInterval(() => {}, 1000);
  `;
  const parent = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => parent.kill('SIGKILL'));
  const pgid = await new Promise<number>((resolve, reject) => {
    parent.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    parent.once('exit', (code) => reject(new Error(`parent exited early with ${code}`)));
  });
  assert.equal(groupExists(pgid), true);
  parent.kill('SIGKILL');
  await groupDies(pgid);
});
