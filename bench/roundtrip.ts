/**
 * Invocation round trip: from the gateway's FunctionService starting one `invoke` to its parsed
 * answer, through the gateway's own transport, signer and validation, constructed as the gateway
 * constructs them. This process is the gateway side; no control plane (only the call is measured).
 * One create handler returning a small object (causeway-operator.ts), served four ways, one after the
 * other in the same run: `causeway serve` (the CLI bundled as deployed, in a process of its own) over
 * HTTP and over HTTPS, and workerd (inside Miniflare, as `wrangler dev` serves a Worker) over HTTP and
 * over HTTPS. Each under two loads: one call at a time, then `--in-flight` calls at once; warm-up
 * calls first, not counted. Also the gateway side's CPU time per call (this process's). Calls are
 * signed with a key of the gateway's own (Ed25519, the services holding its public half) unless
 * `--signing hmac`: a secret shared with the service (HS256).
 *
 *   npm run bench:roundtrip -- [--calls 2000] [--concurrent-calls 10000] [--in-flight 16] [--warmup 200]
 *                              [--signing ed25519|hmac] [--only serve|workerd] [--quick] [--node-flags="…"]
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePorts } from '../deploy/control-plane/index.ts';
import { DEFAULT_SETTINGS } from '../gateway/index.ts';
import {
  FunctionService,
  hmacSigner,
  httpTransport,
  invocationRequest,
  keySigner,
  newKey,
  publicKeys,
  type Signer,
  signingKeyOf,
  type Transport,
} from '../gateway/internals.ts';
import {
  encodeSecret,
  HANDLER_KINDS,
  type HandlerSpec,
  type InvocationRequest,
  JWKS_VARIABLE,
  type Reason,
  SECRET_VARIABLE,
} from '../protocol/index.ts';
import { startWorker } from '../test/support/workerd.ts';
import {
  type FunctionCertificates,
  nodeFlagsOption,
  operatorProcess,
  percentiles,
  prepareContenders,
  ROOT,
  saveResults,
  say,
  table,
  until,
} from './common.ts';

const { values } = parseArgs({
  options: {
    calls: { type: 'string' },
    'concurrent-calls': { type: 'string' },
    'in-flight': { type: 'string', default: '16' },
    warmup: { type: 'string' },
    only: { type: 'string' },
    signing: { type: 'string', default: 'ed25519' },
    // Counts small enough to see that every configuration runs, not to measure.
    quick: { type: 'boolean', default: false },
    'node-flags': { type: 'string' },
  },
});
const QUICK = values.quick;
const WARMUP = Number(values.warmup ?? (QUICK ? 20 : 200));
const SEQUENTIAL_CALLS = Number(values.calls ?? (QUICK ? 100 : 2000));
const CONCURRENT_CALLS = Number(values['concurrent-calls'] ?? (QUICK ? 400 : 10_000));
const IN_FLIGHT = Number(values['in-flight']);
const SIGNING_MODES = ['ed25519', 'hmac'] as const;
type SigningMode = (typeof SIGNING_MODES)[number];
if (!SIGNING_MODES.includes(values.signing as SigningMode))
  throw new Error(`--signing is ed25519 or hmac, not ${values.signing}`);
const SIGNING = values.signing as SigningMode;

const OPERATOR = 'causeway-operator.ts';
/** The operator's name (`operator({ name: 'bench' })`): the gateway pins it, as `--functions bench=<url>` does. */
const SERVICE_NAME = 'bench';
/** The gateway's defaults for calls: its call timeout, and its pool of connections per service. */
const CALLS = DEFAULT_SETTINGS.calls;

/** Where a function service answers, and how to stop it. */
interface Served {
  url: string;
  /** PEM for the gateway to trust (settings.calls.ca, `--functions-ca`), for HTTPS. */
  ca?: string;
  /** When it runs in a process of its own: whether that process has gone, and its stderr's tail. */
  exited?: { gone(): boolean; stderr: Promise<string> };
  stop(): Promise<void>;
}

interface Configuration {
  service: 'causeway serve' | 'workerd';
  transport: 'http' | 'https';
  start(): Promise<Served>;
}

interface Load {
  inFlight: number;
  calls: number;
  failures: number;
  firstFailure?: string;
  perSecond: number;
  ms: { p50: number; p90: number; p99: number; max: number };
  /**
   * This process's CPU time (user and system, all its threads) per call: the gateway's side of the
   * round trip, with the kernel's work for its loopback writes, which on loopback includes much of
   * delivering them.
   */
  gatewayCpuMicroseconds: number;
}

interface Result {
  service: string;
  transport: string;
  loads: Load[];
}

/**
 * How calls are signed and verified, in one place: the gateway's FunctionService, connected as
 * FunctionServices connects one (gateway/dispatch/services.ts), and what the service is given to verify
 * with (its environment, or the Worker's bindings). `ed25519`: a key of the gateway's own, as
 * `--signing-keys` makes and uses (gateway/dispatch/keys.ts), the service holding the public half as
 * $CAUSEWAY_JWKS (what it mounts from the ConfigMap's jwks.json). `hmac`: a secret shared with the
 * service, as startTogether (common.ts) shares one and `causeway gateway` reads it (readSecret).
 */
function signing(mode: SigningMode): {
  serviceEnv: Record<string, string>;
  connect(transport: Transport): Promise<FunctionService>;
} {
  let sign: Signer;
  let serviceEnv: Record<string, string>;
  if (mode === 'hmac') {
    const secret = randomBytes(32).toString('base64url');
    sign = hmacSigner(encodeSecret(secret));
    serviceEnv = { [SECRET_VARIABLE]: secret };
  } else {
    const stored = newKey(Date.now());
    const key = signingKeyOf(stored);
    sign = keySigner(() => key);
    serviceEnv = { [JWKS_VARIABLE]: JSON.stringify(publicKeys([stored])) };
  }
  return {
    serviceEnv,
    connect: (transport) =>
      FunctionService.connect({ transport, name: SERVICE_NAME, sign, timeoutMs: CALLS.timeoutMs }),
  };
}

async function main(): Promise<void> {
  const commands = await prepareContenders(nodeFlagsOption(values['node-flags']));
  const trust = signing(SIGNING);
  const serve = async (tls: boolean): Promise<Served> => {
    const [port] = await freePorts(1);
    const command = commands.causewayServe(OPERATOR, port as number, { tls });
    // `causeway serve` reads no kubeconfig: the empty one operatorProcess wants is never looked at.
    const running = operatorProcess(command, '', trust.serviceEnv);
    return {
      url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`,
      ...(tls ? { ca: commands.tls.pem.ca } : {}),
      exited: { gone: () => running.gone, stderr: running.exited },
      stop: () => running.stop(),
    };
  };
  const all: Configuration[] = [
    { service: 'causeway serve', transport: 'http', start: () => serve(false) },
    { service: 'causeway serve', transport: 'https', start: () => serve(true) },
    { service: 'workerd', transport: 'http', start: () => serveOnWorkerd(trust.serviceEnv) },
    // workerd terminates TLS itself (Miniflare hands the key pair to its entry socket): no proxy in between.
    {
      service: 'workerd',
      transport: 'https',
      start: () => serveOnWorkerd(trust.serviceEnv, commands.tls),
    },
  ];
  const configurations = all.filter(
    (configuration) => !values.only || configuration.service.includes(values.only),
  );
  const results: Result[] = [];
  for (const configuration of configurations) results.push(await measureEach(configuration, trust));
  report(results);
  await saveResults('roundtrip', {
    operator: OPERATOR,
    signing: SIGNING,
    warmup: WARMUP,
    inFlight: IN_FLIGHT,
    versions: { miniflare: packageVersion('miniflare'), workerd: packageVersion('workerd') },
    results,
  });
}

/** One configuration: its service started, connected to as the gateway connects, both loads measured, stopped. */
async function measureEach(configuration: Configuration, trust: ReturnType<typeof signing>): Promise<Result> {
  say(`${configuration.service} over ${configuration.transport}`);
  const served = await configuration.start();
  try {
    const service = await connectWhenUp(trust, served);
    try {
      const handler = await createHandler(service);
      const loads: Load[] = [];
      for (const [inFlight, calls] of [
        [1, SEQUENTIAL_CALLS],
        [IN_FLIGHT, CONCURRENT_CALLS],
      ] as const) {
        say(`  ${inFlight} in flight: ${WARMUP} warm-up calls, then ${calls}`);
        await measure(service, handler, WARMUP, inFlight);
        loads.push(await measure(service, handler, calls, inFlight));
      }
      return { service: configuration.service, transport: configuration.transport, loads };
    } finally {
      await service.close();
    }
  } finally {
    await served.stop();
  }
}

/** The operator on workerd, bundled as `causeway build --target workers` bundles it (test/support/workerd.ts). */
async function serveOnWorkerd(bindings: Record<string, string>, tls?: FunctionCertificates): Promise<Served> {
  const worker = await startWorker(join(ROOT, 'bench/operators', OPERATOR), {
    bindings,
    ...(tls ? { tls: { cert: tls.pem.cert, key: tls.pem.key } } : {}),
  });
  return { url: worker.url, ...(tls ? { ca: tls.pem.ca } : {}), stop: () => worker.close() };
}

/** Connects as the gateway does at start: the same transport, tried again until the service answers. */
async function connectWhenUp(trust: ReturnType<typeof signing>, served: Served): Promise<FunctionService> {
  const transport = httpTransport(served.url, served.ca, CALLS.concurrencyPerService);
  let lastError: unknown;
  try {
    return await until(
      `the function service at ${served.url}`,
      async () => {
        if (served.exited?.gone()) throw new Error(`causeway serve exited: ${await served.exited.stderr}`);
        try {
          return await trust.connect(transport);
        } catch (error) {
          lastError = error;
          return undefined;
        }
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
  } catch (error) {
    await transport.close();
    throw lastError ? new Error(`${(error as Error).message}: ${String(lastError)}`) : error;
  }
}

/** The manifest's create handler, checked once to answer as causeway-operator.ts does. */
async function createHandler(service: FunctionService): Promise<HandlerSpec> {
  const handler = service.manifest.handlers.find((each) => each.kind === 'create');
  if (!handler) throw new Error(`${service.url} has no create handler`);
  const response = await service.invoke(sampleInvocation(handler));
  const outcome = response.outcomes[handler.id];
  if (outcome?.status !== 'success' || JSON.stringify(outcome.result) !== '{"message":"hello kex-1"}')
    throw new Error(`${service.url} answered ${JSON.stringify(outcome)}`);
  return handler;
}

/**
 * The call the gateway makes for a new KopfExample, built as `causeway conformance` builds one per
 * handler (sampleInvocation in gateway/conformance/checks.ts, not exported): a fresh one per call, as
 * the gateway builds one per call (its deadline is the call's).
 */
function sampleInvocation(handler: HandlerSpec): InvocationRequest {
  const { name, group = 'kopf.dev', version = 'v1' } = handler.resource;
  const plural = (name ?? 'kopfexamples').split('.')[0] as string;
  const reason = HANDLER_KINDS[handler.kind].reasons[0] as Reason;
  const object = {
    apiVersion: `${group}/${version}`,
    kind: 'KopfExample',
    metadata: { name: 'kex-1', namespace: 'default', uid: 'e911857d-c318-11e8-bbad-025000000001' },
    spec: { field: 'value', items: ['item1', 'item2'] },
  };
  const due = { id: handler.id, retry: 0, started: new Date().toISOString(), idempotencyKey: 'kex-1' };
  return invocationRequest(
    reason,
    { group, version, plural, kind: 'KopfExample', namespaced: true },
    object,
    [due],
    CALLS.timeoutMs,
  );
}

/** `calls` invocations, `inFlight` at a time; each timed from `invoke` to its parsed answer. */
async function measure(
  service: FunctionService,
  handler: HandlerSpec,
  calls: number,
  inFlight: number,
): Promise<Load> {
  const latencies: number[] = [];
  let failures = 0;
  let firstFailure: string | undefined;
  let left = calls;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (left > 0) {
        left--;
        const invocation = sampleInvocation(handler);
        const sent = performance.now();
        try {
          await service.invoke(invocation);
          latencies.push(performance.now() - sent);
        } catch (error) {
          failures++;
          firstFailure ??= String(error);
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  return {
    inFlight,
    calls: latencies.length,
    failures,
    ...(firstFailure ? { firstFailure } : {}),
    perSecond: latencies.length / elapsed,
    ms: percentiles(latencies),
    gatewayCpuMicroseconds: (cpu.user + cpu.system) / calls,
  };
}

function packageVersion(name: string): string {
  return (
    JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }
  ).version;
}

function report(results: Result[]): void {
  const rows = results.flatMap((result) =>
    result.loads.map((load) => [
      result.service,
      result.transport,
      String(load.inFlight),
      String(load.calls),
      `${load.perSecond.toFixed(0)}/s`,
      ...(['p50', 'p90', 'p99', 'max'] as const).map((q) => `${load.ms[q].toFixed(2)} ms`),
      String(load.failures),
      `${load.gatewayCpuMicroseconds.toFixed(0)} µs`,
    ]),
  );
  say(
    `\nInvocation round trips, gateway to function service, signed ${SIGNING} (${WARMUP} warm-up calls before each load)`,
  );
  for (const line of table(
    [
      'service',
      'transport',
      'in flight',
      'calls',
      'calls/s',
      'p50',
      'p90',
      'p99',
      'max',
      'failed',
      'gateway CPU/call',
    ],
    rows,
  ))
    say(line);
  for (const result of results)
    for (const load of result.loads)
      if (load.firstFailure)
        say(`${result.service} over ${result.transport}, ${load.inFlight} in flight: ${load.firstFailure}`);
}

await main();
