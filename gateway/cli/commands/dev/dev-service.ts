/**
 * `causeway dev`'s function service: the operator module served by a `causeway serve` child process,
 * behind a front server whose URL stays the same. A reload starts a new child, which loads the module
 * and everything it imports afresh, moves new calls to it once it listens, and ends the old one when
 * its calls are done; a module that fails to load leaves the previous child serving.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SECRET_VARIABLE } from '../../../../protocol/index.ts';
import type { Logger } from '../../../logging.ts';

interface Child {
  process: ChildProcess;
  port: number;
  /** Requests under way through the front. */
  active: number;
  retired: boolean;
}

export interface DevServiceOptions {
  module: string;
  /** The secret the children verify calls with; undefined when their arguments say (`--jwks-file`). */
  secret: string | undefined;
  /** Extra arguments for `causeway serve` (log level). */
  serveArgs: readonly string[];
  logger: Logger;
}

export class DevService {
  readonly #options: DevServiceOptions;
  readonly #server: Server;
  readonly #agent = new Agent({ keepAlive: true });
  #current: Child | undefined;
  #port = 0;

  private constructor(options: DevServiceOptions) {
    this.#options = options;
    this.#server = createServer((incoming, outgoing) => {
      const child = this.#current;
      if (!child) {
        outgoing.writeHead(503, { 'content-type': 'application/json' });
        outgoing.end(JSON.stringify({ error: 'the operator module is not loaded' }));
        return;
      }
      child.active++;
      const done = () => {
        child.active--;
        if (child.retired && child.active === 0) child.process.kill('SIGTERM');
      };
      const upstream = request(
        {
          host: '127.0.0.1',
          port: child.port,
          method: incoming.method,
          path: incoming.url,
          headers: incoming.headers,
          agent: this.#agent,
        },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
          answer.once('end', done);
        },
      );
      upstream.once('error', (error) => {
        done();
        if (outgoing.headersSent) return void outgoing.destroy(error);
        outgoing.writeHead(502, { 'content-type': 'application/json' });
        outgoing.end(JSON.stringify({ error: `the dev function service failed: ${error.message}` }));
      });
      incoming.pipe(upstream);
    });
  }

  /** Listens on `host` (any port) and serves the module; fails if it does not load. */
  static async start(options: DevServiceOptions, host = '127.0.0.1'): Promise<DevService> {
    const service = new DevService(options);
    service.#current = await service.#spawn();
    await new Promise<void>((resolve, reject) => {
      service.#server.once('error', reject);
      service.#server.listen(0, host, resolve);
    });
    service.#port = (service.#server.address() as AddressInfo).port;
    return service;
  }

  get port(): number {
    return this.#port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  /** Loads the module afresh; resolves false (the previous code still serving) when it fails to. */
  async reload(): Promise<boolean> {
    let next: Child;
    try {
      next = await this.#spawn();
    } catch (error) {
      this.#options.logger.error(
        `reload failed, the previous code keeps serving: ${error instanceof Error ? error.message : error}`,
      );
      return false;
    }
    const previous = this.#current;
    this.#current = next;
    if (previous) this.#retire(previous);
    return true;
  }

  async close(): Promise<void> {
    const child = this.#current;
    this.#current = undefined;
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
    this.#agent.destroy();
    if (child) {
      const exited = new Promise((resolve) => child.process.once('exit', resolve));
      if (child.process.exitCode === null) child.process.kill('SIGTERM');
      await exited;
    }
  }

  #retire(child: Child): void {
    child.retired = true;
    if (child.active === 0) child.process.kill('SIGTERM');
  }

  /** A `causeway serve` of the module on a free port of this host, which tells where over IPC. */
  #spawn(): Promise<Child> {
    const { module, secret, serveArgs } = this.#options;
    const cli = process.argv[1] as string;
    const child = fork(cli, ['serve', module, '--port', '0', '--host', '127.0.0.1', ...serveArgs], {
      env: { ...process.env, ...(secret ? { [SECRET_VARIABLE]: secret } : {}) },
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
    });
    let errors = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      errors += chunk.toString();
      process.stderr.write(chunk);
    });
    return new Promise((resolve, reject) => {
      child.once('message', (message: { listening?: string }) => {
        if (!message.listening) return;
        child.removeAllListeners('exit');
        const served: Child = {
          process: child,
          port: Number(new URL(message.listening).port),
          active: 0,
          retired: false,
        };
        child.once('exit', (code, signal) => {
          if (this.#current === served) {
            this.#options.logger.error(
              `the function service exited (${code ?? signal}): save a file to start it again`,
            );
          }
        });
        resolve(served);
      });
      child.once('exit', (code) => reject(new Error(errors.trim() || `causeway serve exited with ${code}`)));
    });
  }
}
