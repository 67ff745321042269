/**
 * Serves an operator module on Bun or Deno (both from npm, devDependencies here), as their users
 * serve a fetch handler: `Bun.serve` and `Deno.serve`, the module bundled as for Workers.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleModule } from './workerd.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

export type ServerRuntime = 'bun' | 'deno';

export interface RuntimeServer {
  url: string;
  close(): Promise<void>;
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
  await writeFile(join(dir, 'operator.mjs'), await bundleModule(entry, { sources: true }));
  await writeFile(join(dir, 'server.mjs'), SERVERS[runtime].source);
  const child = spawn(
    join(ROOT, 'node_modules/.bin', runtime),
    SERVERS[runtime].args(join(dir, 'server.mjs')),
    {
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: dir, DENO_DIR: join(dir, '.deno'), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
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
