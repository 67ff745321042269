/**
 * The services a gateway serves can change under it: a redeploy with other handlers is found when the
 * manifests are read again, and a dev session redirects a service only to something that answers as it.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { operator } from '../../functions/index.ts';
import { invocation } from '../../functions/test-helpers.ts';
import { PATHS, type ServiceScope } from '../../protocol/index.ts';
import { eventually } from '../../test/support/operator.ts';
import { type RunningServer, serveFetch } from '../cli/commands/serve/serve.ts';
import { DEFAULT_IDENTITY } from '../identity.ts';
import { createLogger } from '../logging.ts';
import { DEFAULT_SETTINGS } from '../settings.ts';
import type { FunctionService } from './function-service.ts';
import { Refusals } from './refusals.ts';
import { ScopeError } from './scope.ts';
import { type FunctionEndpoint, FunctionServices } from './services.ts';
import { hmacSigner } from './signer.ts';

const SECRET = 'a secret of at least thirty-two bytes, for the test';
/** Most tests here are about other things than scopes: their services are served unscoped. */
const UNSCOPED = { ...DEFAULT_SETTINGS.calls, unscoped: true };

function greeter(name: string) {
  const op = operator({ name, secret: SECRET });
  op.on.create('kopfexamples', function create_fn() {});
  return op;
}

describe('the function services of a gateway', () => {
  const servers: RunningServer[] = [];
  after(() => Promise.all(servers.map((server) => server.close())));
  const serve = async (handler: ReturnType<typeof greeter>) => {
    const server = await serveFetch(handler, { port: 0, host: '127.0.0.1' });
    servers.push(server);
    return server.url;
  };

  async function directory(home: ReturnType<typeof greeter>) {
    const changes: Array<{ previous: FunctionService | undefined; next: FunctionService | undefined }> = [];
    const services = new FunctionServices({
      signer: hmacSigner(new TextEncoder().encode(SECRET)),
      settings: UNSCOPED,
      logger: createLogger({ level: 'error' }),
    });
    services.onChange(async (previous, next) => void changes.push({ previous, next }));
    await services.connect([home], AbortSignal.timeout(5000));
    return { services, changes };
  }

  it('rebinds a service whose handlers changed when the manifests are read again, and only then', async () => {
    const home = greeter('billing');
    const { services, changes } = await directory(home);
    await services.refresh();
    assert.equal(changes.length, 0, 'the same manifest changes nothing');

    home.on.delete('kopfexamples', function delete_fn() {});
    await services.refresh();
    assert.equal(changes.length, 1);
    assert.deepEqual(
      changes[0]?.next?.manifest.handlers.map((handler) => handler.id),
      ['create_fn', 'delete_fn'],
    );
    assert.equal(services.current[0], changes[0]?.next);
    await services.close();
  });

  it('redirects to a URL that answers as the service, refuses others, and comes home', async () => {
    const { services, changes } = await directory(greeter('billing'));
    const home = services.current[0];

    assert.equal(
      await services.redirect('billing', { url: await serve(greeter('shipping')), revision: '1' }),
      false,
    );
    assert.equal(await services.redirect('billing', { url: 'http://127.0.0.1:1', revision: '1' }), false);
    assert.equal(await services.redirect('unknown', undefined), false);
    assert.equal(changes.length, 0, 'refused redirects leave the calls where they were');

    const laptop = await serve(greeter('billing'));
    assert.equal(await services.redirect('billing', { url: laptop, revision: '1' }), true);
    assert.equal(services.current[0]?.url, laptop);
    assert.equal(await services.redirect('billing', { url: laptop, revision: '1' }), true);
    assert.equal(changes.length, 1, 'the same session again changes nothing');

    assert.equal(await services.redirect('billing', undefined), true);
    assert.equal(services.current[0], home, 'home, as it was: its manifest did not change');
    assert.equal(changes.length, 2);
    await services.close();
  });

  it('comes home to the service as redeployed meanwhile', async () => {
    const deployed = greeter('billing');
    const { services, changes } = await directory(deployed);
    assert.equal(
      await services.redirect('billing', { url: await serve(greeter('billing')), revision: '1' }),
      true,
    );
    deployed.on.delete('kopfexamples', function delete_fn() {});
    assert.equal(await services.redirect('billing', undefined), true);
    assert.deepEqual(
      services.current[0]?.manifest.handlers.map((handler) => handler.id),
      ['create_fn', 'delete_fn'],
    );
    await services.refresh();
    assert.equal(changes.length, 2, 'the refresh finds nothing new');
    await services.close();
  });
});

describe('a service that answers it lacks handlers it was called for', () => {
  it('has its manifest alone read at once, then no sooner than the spacing after, the asks meanwhile as one', async (t) => {
    const reads = { billing: 0, shipping: 0 };
    const counted = (op: ReturnType<typeof greeter>, name: keyof typeof reads) => ({
      fetch: (request: Request) => {
        if (new URL(request.url).pathname === PATHS.manifest) reads[name]++;
        return op.fetch(request);
      },
    });
    const servers = await Promise.all([
      serveFetch(counted(greeter('billing'), 'billing'), { port: 0, host: '127.0.0.1' }),
      serveFetch(counted(greeter('shipping'), 'shipping'), { port: 0, host: '127.0.0.1' }),
    ]);
    t.after(() => Promise.all(servers.map((server) => server.close())));
    const services = new FunctionServices({
      signer: hmacSigner(new TextEncoder().encode(SECRET)),
      settings: { ...UNSCOPED, manifestRereadSpacingMs: 300 },
      logger: createLogger({ level: 'error' }),
    });
    t.after(() => services.close());
    const [billing] = await Promise.all([
      services.put({ name: 'billing', url: (servers[0] as RunningServer).url }),
      services.put({ name: 'shipping', url: (servers[1] as RunningServer).url }),
    ]);
    const connected = { ...reads };
    /** Calls billing for a handler it does not have, as a gateway that has not read its redeploy yet does. */
    const callGone = (times: number) =>
      Promise.all(
        Array.from({ length: times }, () =>
          assert.rejects(billing.invoke(invocation(['gone_fn'])), (error: unknown) =>
            Boolean((error as { missingHandlers?: unknown }).missingHandlers),
          ),
        ),
      );
    const asked = Date.now(); // the first re-read is at once, so no sooner than this
    await callGone(3);
    await eventually('the first re-read', async () => reads.billing === connected.billing + 1 || undefined);
    await callGone(3);
    await eventually(
      'the second re-read, for the three asks after',
      async () => reads.billing === connected.billing + 2 || undefined,
    );
    assert.ok(Date.now() - asked >= 300, 'the second re-read came after the spacing');
    assert.equal(reads.shipping, connected.shipping, "shipping's manifest was not read again");
  });
});

describe('function services given while the gateway runs', () => {
  it('are added, given anew and removed, each change told once, and one that does not answer changes nothing', async (t) => {
    const servers = await Promise.all(
      [greeter('billing'), greeter('billing'), greeter('shipping')].map((op) =>
        serveFetch(op, { port: 0, host: '127.0.0.1' }),
      ),
    );
    t.after(() => Promise.all(servers.map((server) => server.close())));
    const [first, second, other] = servers.map((server) => server.url) as [string, string, string];
    const changes: string[] = [];
    const services = new FunctionServices({
      signer: hmacSigner(new TextEncoder().encode(SECRET)),
      settings: UNSCOPED,
      logger: createLogger({ level: 'error' }),
    });
    services.onChange(
      async (previous, next) => void changes.push(`${previous?.url ?? '-'} → ${next?.url ?? '-'}`),
    );
    t.after(() => services.close());

    const added = await services.put({ name: 'billing', url: first });
    assert.equal(added.name, 'billing');
    await services.put({ name: 'billing', url: second, timeoutMs: 1000 });
    assert.equal(services.current[0]?.timeoutMs, 1000);
    await assert.rejects(
      services.put({ name: 'billing', url: other }),
      /answers as "shipping", not as "billing"/,
    );
    assert.equal(services.current[0]?.url, second, 'the service that answered stays');
    await services.remove('billing');
    await services.remove('billing'); // gone already: nothing to tell
    assert.deepEqual(changes, [`- → ${first}`, `${first} → ${second}`, `${second} → -`]);
    assert.deepEqual(services.current, []);
  });
});

describe('a function service named in the configuration', () => {
  it('is refused when it answers as another, and no request is signed for the name it chose', async (t) => {
    const impostor = greeter('billing');
    let signedFor: string | undefined;
    const server = await serveFetch(
      {
        fetch: (request) => {
          const token = request.headers.get('authorization')?.split('.')[1];
          if (token) signedFor = JSON.parse(atob(token.replace(/-/g, '+').replace(/_/g, '/'))).aud;
          return impostor.fetch(request);
        },
      },
      { port: 0, host: '127.0.0.1' },
    );
    t.after(() => server.close());
    const errors: string[] = [];
    const refusals = new Refusals();
    const services = new FunctionServices({
      signer: hmacSigner(new TextEncoder().encode(SECRET)),
      settings: DEFAULT_SETTINGS.calls,
      logger: createLogger({ level: 'error', sink: { write: (line) => errors.push(line) } }),
      refusals,
    });
    t.after(() => services.close());
    // Refused, not waited for: the gateway starts with the others.
    await services.connect(
      [{ name: 'shipping', url: server.url, scope: { resources: ['*'] } }],
      AbortSignal.timeout(5000),
    );
    assert.deepEqual(services.current, []);
    const said = /answers as "billing", not as "shipping", the name the gateway was given for it/;
    assert.match(refusals.why('shipping') ?? '', said);
    assert.match(errors.join(''), /function service "shipping" is refused: .*answers as "billing"/);
    assert.equal(signedFor, undefined, 'nothing was signed for it');
  });
});

describe('a function service refused for its manifest', () => {
  /** Two services, billing deployed as `first` (greedy: declaring more than its pin) until redeployed. */
  async function twoServices(t: { after: (fn: () => unknown) => void }, first: 'greedy' | 'good') {
    const greedy = operator({ name: 'billing', secret: SECRET, scope: { resources: ['secrets'] } });
    greedy.on.create('kopfexamples', function create_fn() {});
    const deployments = { greedy, good: greeter('billing') };
    let deployed = deployments[first];
    const manifestReads: number[] = [];
    const billing = await serveFetch(
      {
        fetch: (request) => {
          if (new URL(request.url).pathname === PATHS.manifest) manifestReads.push(performance.now());
          return deployed.fetch(request);
        },
      },
      { port: 0, host: '127.0.0.1' },
    );
    t.after(() => billing.close());
    const shipping = await serveFetch(greeter('shipping'), { port: 0, host: '127.0.0.1' });
    t.after(() => shipping.close());
    const refusals = new Refusals();
    const lines: string[] = [];
    const changes: Array<string | undefined> = [];
    const services = new FunctionServices({
      signer: hmacSigner(new TextEncoder().encode(SECRET)),
      // Re-read every 20 ms at first, every 100 ms at most.
      settings: { ...DEFAULT_SETTINGS.calls, manifestRereadSpacingMs: 20, manifestRefreshMs: 100 },
      logger: createLogger({ level: 'info', sink: { write: (line) => lines.push(line) } }),
      refusals,
    });
    services.onChange(async (_previous, next) => void changes.push(next?.name));
    t.after(() => services.close());
    await services.connect(
      [
        { name: 'billing', url: billing.url, scope: { resources: ['kopfexamples.kopf.dev'] } },
        { name: 'shipping', url: shipping.url, scope: { resources: ['*'] } },
      ],
      AbortSignal.timeout(5000),
    );
    const redeploy = (as: 'greedy' | 'good') => {
      deployed = deployments[as];
    };
    return { services, refusals, lines, changes, redeploy, manifestReads };
  }
  const BEYOND = '"billing" declares a scope beyond the one pinned for it: resources: secrets';
  const refusedLines = (lines: string[]) => lines.filter((line) => /is refused/.test(line));

  it('is left out at the start, the others served, and taken up once its manifest is fixed', async (t) => {
    const { services, refusals, lines, changes, redeploy, manifestReads } = await twoServices(t, 'greedy');
    assert.deepEqual(
      services.current.map((service) => service.name),
      ['shipping'],
    );
    assert.equal(refusals.why('billing'), BEYOND);
    assert.equal(refusedLines(lines).length, 1);
    assert.match(lines.join(''), /function service "billing" is refused: "billing" declares a scope beyond/);
    const started = performance.now();
    const before = manifestReads.length;
    services.start();
    // Read again, refused again (said once, not at each re-read), spaced: no busy loop.
    await eventually('three re-reads', async () => (manifestReads.length >= before + 3 ? true : undefined));
    const reads = manifestReads.length - before;
    // The first after 10 ms at least (20, jittered by half), then doubled: never more often.
    assert.ok(reads <= (performance.now() - started) / 10 + 1, `${reads} re-reads`);
    assert.equal(refusals.why('billing'), BEYOND);
    assert.equal(changes.length, 0, 'not served meanwhile');
    redeploy('good');
    await eventually('billing taken up', async () => (changes.includes('billing') ? true : undefined));
    assert.deepEqual(
      services.current.map((service) => service.name),
      ['shipping', 'billing'],
    );
    assert.equal(refusals.why('billing'), undefined);
    assert.deepEqual([...refusals.readings()], [['billing', false]]);
    assert.equal(refusedLines(lines).length, 1, lines.join(''));
    assert.match(
      lines.join(''),
      /function service "billing" at \S+ is served now, its manifest accepted: handlers create_fn/,
    );
  });

  it('redeployed with a manifest refused while served, keeps its handlers, said refused until fixed', async (t) => {
    const { services, refusals, changes, redeploy } = await twoServices(t, 'good');
    const served = services.current[0];
    assert.equal(served?.name, 'billing');
    redeploy('greedy');
    await services.refresh();
    assert.equal(services.current[0], served, 'the one served stays');
    assert.equal(refusals.why('billing'), BEYOND);
    redeploy('good');
    await services.refresh();
    assert.equal(refusals.why('billing'), undefined);
    assert.deepEqual(changes, []);
  });
});

describe('a served function service its scope check refuses when redeployed', () => {
  it('is said refused once, not again at each refresh, and keeps the handlers it had', async (t) => {
    const first = greeter('billing');
    const redeployed = greeter('billing');
    redeployed.on.event('secrets', function steal() {});
    let deployed = first;
    const server = await serveFetch(
      { fetch: (request) => deployed.fetch(request) },
      { port: 0, host: '127.0.0.1' },
    );
    t.after(() => server.close());
    const refusals = new Refusals();
    const told: string[] = [];
    refusals.onChange((name) => told.push(`${name}: ${refusals.why(name) ?? 'served'}`));
    const services = new FunctionServices({
      signer: hmacSigner(new TextEncoder().encode(SECRET)),
      settings: DEFAULT_SETTINGS.calls,
      logger: createLogger({ level: 'error' }),
      refusals,
      scope: {
        identity: DEFAULT_IDENTITY,
        resourceOf: async () => {
          throw new Error('no answer is held here');
        },
        current: async () => {
          throw new Error('no answer is held here');
        },
        // As binding/scope-check.ts finds a handler beyond the pin.
        vet: async (service) => {
          if (service.manifest.handlers.some((handler) => handler.id === 'steal'))
            throw new ScopeError('handler "steal" of "billing" names secrets');
        },
      },
    });
    t.after(() => services.close());
    await services.connect(
      [{ name: 'billing', url: server.url, scope: { resources: ['*'] } }],
      AbortSignal.timeout(5000),
    );
    const served = services.current[0];
    deployed = redeployed;
    await services.refresh();
    await services.refresh();
    assert.equal(services.current[0], served);
    assert.deepEqual(told, ['billing: handler "steal" of "billing" names secrets']);
    deployed = first;
    await services.refresh();
    assert.deepEqual(told, ['billing: handler "steal" of "billing" names secrets', 'billing: served']);
  });
});

describe('the way to a function service', () => {
  const directory = (plainHttp: boolean) =>
    new FunctionServices({
      signer: hmacSigner(new TextEncoder().encode(SECRET)),
      settings: { ...UNSCOPED, plainHttp },
      logger: createLogger({ level: 'error' }),
    });

  it('is HTTPS, or plain HTTP on this host, unless plain HTTP is allowed', async () => {
    await assert.rejects(
      directory(false).connect(
        [{ name: 'billing', url: 'http://billing-functions:8080' }],
        AbortSignal.timeout(1000),
      ),
      /http:\/\/billing-functions:8080: function services are called over HTTPS, or plain HTTP on this host/,
    );
    // Allowed, it is tried (and here, with no such host, it keeps trying until told to stop).
    await assert.rejects(
      directory(true).connect(
        [{ name: 'billing', url: 'http://billing-functions.invalid:8080' }],
        AbortSignal.timeout(300),
      ),
      (error: Error) => !/called over HTTPS/.test(error.message),
    );
  });
});

describe('the scope of a function service', () => {
  const KOPFEXAMPLES = { resources: ['kopfexamples.kopf.dev'] };
  /** A guard whose answers are never asked about here: only the manifest is vetted. */
  const refusingNothing = {
    identity: DEFAULT_IDENTITY,
    resourceOf: async () => {
      throw new Error('no answer is held here');
    },
    current: async () => {
      throw new Error('no answer is held here');
    },
  };

  async function tried(
    endpoint: Partial<FunctionEndpoint>,
    options: {
      unscoped?: boolean;
      declared?: ServiceScope;
      vet?: (service: FunctionService) => Promise<void>;
    } = {},
  ) {
    const op = operator({
      name: 'billing',
      secret: SECRET,
      ...(options.declared ? { scope: options.declared } : {}),
    });
    op.on.create('kopfexamples', function create_fn() {});
    const server = await serveFetch(op, { port: 0, host: '127.0.0.1' });
    const warnings: string[] = [];
    const services = new FunctionServices({
      signer: hmacSigner(new TextEncoder().encode(SECRET)),
      settings: { ...DEFAULT_SETTINGS.calls, unscoped: options.unscoped ?? false },
      logger: createLogger({ level: 'warning', sink: { write: (line) => warnings.push(line) } }),
      ...(options.vet ? { scope: { ...refusingNothing, vet: options.vet } } : {}),
    });
    try {
      const service = await services.put({ name: 'billing', url: server.url, ...endpoint });
      return { service, warnings };
    } finally {
      await services.close();
      await server.close();
    }
  }

  it('is pinned for a service over HTTP, or the gateway says it serves it unscoped', async () => {
    await assert.rejects(
      tried({}),
      /function service "billing" has no scope: pin what it may reach \(--function-scope, a FunctionService's spec\.scope\), or serve it unscoped \(--unscoped\)/,
    );
    const { service, warnings } = await tried({}, { unscoped: true });
    assert.equal(service.scope, undefined);
    assert.match(warnings.join(''), /"billing" is served unscoped \(--unscoped\)/);
    assert.deepEqual((await tried({ scope: KOPFEXAMPLES })).service.scope, KOPFEXAMPLES);
  });

  it('refuses a service that declares more than its pin, naming what is beyond it', async () => {
    const declared = { resources: ['kopfexamples.kopf.dev', 'secrets'], children: ['configmaps'] };
    await assert.rejects(
      tried({ scope: KOPFEXAMPLES }, { declared }),
      /"billing" declares a scope beyond the one pinned for it: resources: secrets; children: configmaps/,
    );
    const within = { resources: ['kopfexamples.kopf.dev'] };
    assert.deepEqual((await tried({ scope: { resources: ['*'] } }, { declared: within })).service.scope, {
      resources: ['*'],
    });
  });

  it('refuses a service the gateway finds beyond its scope when it connects', async () => {
    await assert.rejects(
      tried(
        { scope: KOPFEXAMPLES },
        {
          vet: async () => {
            throw new Error('handler "create_fn" names secrets');
          },
        },
      ),
      /handler "create_fn" names secrets/,
    );
  });

  it('is the declared one for an operator in this process, one trust domain with the gateway', async () => {
    const op = operator({ name: 'inside', secret: SECRET, scope: KOPFEXAMPLES });
    op.on.create('kopfexamples', function create_fn() {});
    const services = new FunctionServices({
      signer: undefined,
      settings: DEFAULT_SETTINGS.calls,
      logger: createLogger({ level: 'error' }),
    });
    await services.connect([op], AbortSignal.timeout(5000));
    assert.deepEqual(services.current[0]?.scope, KOPFEXAMPLES);
    await services.close();
  });
});
