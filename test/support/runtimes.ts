/**
 * Serves an operator module on Bun or Deno (both from npm, devDependencies here), as their users
 * serve a fetch handler: `Bun.serve` and `Deno.serve`, the module bundled as for Workers.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleForWorkers } from '../../gateway/cli/commands/build/build.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

export type ServerRuntime = 'bun' | 'deno';

export interface RuntimeServer {
  url: string;
  close(): Promise<void>;
}

/**
 * The runtime's own binary: from its package for this platform (`@oven/bun-linux-x64`,
 * `@deno/linux-x64-glibc`, ...), or where its install script put it. Not `node_modules/.bin`: without
 * that script, bun's is a stub that says so, and deno's is a Node script that runs the binary as a
 * child, which outlives a kill.
 */
function binary(runtime: ServerRuntime): string {
  const modules = join(ROOT, 'node_modules');
  const [scope, prefix, inside, installed] =
    runtime === 'bun'
      ? ['@oven', `bun-${process.platform}-${process.arch}`, 'bin/bun', 'bun/bin/bun.exe']
      : ['@deno', `${process.platform}-${process.arch}`, 'deno', 'deno/deno'];
  const platformPackages = existsSync(join(modules, scope)) ? readdirSync(join(modules, scope)).sort() : [];
  const candidates = [
    ...platformPackages
      .filter((name) => name.startsWith(prefix))
      .map((name) => join(modules, scope, name, inside)),
    join(modules, installed),
  ];
  // A real binary is tens of megabytes; the stubs are a few hundred bytes.
  const found = candidates.find((path) => existsSync(path) && statSync(path).size > 1024 * 1024);
  if (!found)
    throw new Error(
      `no ${runtime} binary for ${process.platform}-${process.arch} under ${modules}: npm install`,
    );
  return found;
}

const SERVERS: Record<ServerRuntime, { source: string; args: (file: string) => string[] }> = {
  bun: {
    source: `import op from './operator.mjs';
const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => op.fetch(request) });
console.log('listening on ' + server.url.href.replace(/\\/$/, ''));
`,
    args: (file) => ['run', file],
  },
  deno: {
    source: `import op from './operator.mjs';
Deno.serve(
  { hostname: '127.0.0.1', port: 0, onListen: ({ hostname, port }) => console.log(\`listening on http://\${hostname}:\${port}\`) },
  (request) => op.fetch(request),
);
`,
    // Only what a function service needs: to listen, and to read its secret from the environment.
    args: (file) => ['run', '--allow-net=127.0.0.1', '--allow-env', '--no-prompt', file],
  },
};

export async function startOnRuntime(
  runtime: ServerRuntime,
  entry: string,
  env: Record<string, string>,
): Promise<RuntimeServer> {
  const dir = await mkdtemp(join(tmpdir(), `causeway-${runtime}-`));
  await writeFile(join(dir, 'operator.mjs'), await bundleForWorkers(entry));
  await writeFile(join(dir, 'server.mjs'), SERVERS[runtime].source);
  const child = spawn(binary(runtime), SERVERS[runtime].args(join(dir, 'server.mjs')), {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: dir, DENO_DIR: join(dir, '.deno'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1] as string);
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('exit', (code) =>
      reject(new Error(`${runtime} exited (${code}) before listening:\n${output}`)),
    );
  });
  return {
    url,
    async close() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
