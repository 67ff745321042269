/**
 * Admission throughput: AdmissionReviews per second and their latency, sent straight to each webhook
 * server as the apiserver sends them, with one validating handler that allows everything; keep-alive,
 * `--connections` at once, for `--seconds`. Causeway over HTTPS with the handler in the gateway's
 * process (`causeway run`) and as deployed (`causeway gateway` calling `causeway serve`); Kopf's
 * WebhookServer (plain HTTP, see kopf_admission.py) with the same handler; in the same run, on one
 * control plane (both need it to start).
 *
 * `--compare <ref>` adds the same at another commit (in one process, and apart), bundled as this one is:
 * an A/B in one run.
 *
 *   npm run bench:admission -- [--seconds 10] [--connections 16] [--only kopf|causeway] [--node-flags="…"]
 *                              [--compare <ref>] [--no-apart (Causeway in one process only)]
 */
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { freePorts } from '../deploy/control-plane/index.ts';
import { ignoreNotFound, type KubeClient } from '../gateway/internals.ts';
import {
  type Command,
  type Contenders,
  createNamespace,
  KOPF_NAME,
  nodeFlagsOption,
  type OperatorProcess,
  operatorProcess,
  percentiles,
  pidsOf,
  prepareContenders,
  processUsage,
  saveResults,
  say,
  startTogether,
  table,
  until,
  withArgs,
  withCluster,
} from './common.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '16' },
    only: { type: 'string' },
    'node-flags': { type: 'string' },
    compare: { type: 'string' },
    'no-apart': { type: 'boolean', default: false },
  },
});
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);

interface Target {
  /** The webhook's URL. */
  url: string;
  /** PEM to trust, for HTTPS. */
  ca?: string;
}

interface Contender {
  name: string;
  start(
    namespace: string,
    kubeconfig: string,
  ): Promise<{ running: OperatorProcess & { pids?: number[] }; target: Target }>;
}

interface Result {
  name: string;
  transport: string;
  reviews: number;
  failures: number;
  perSecond: number;
  ms: { p50: number; p90: number; p99: number; max: number };
  peakRssMiB: number[];
  cpuSeconds: number[];
}

async function main(): Promise<void> {
  const commands = await prepareContenders(nodeFlagsOption(values['node-flags']), values.compare);
  await withCluster(async ({ controlPlane, client }) => {
    const webhookOf = (namespace: string) => causewayWebhook(client, namespace);
    /** `causeway run`, of this commit or of the one `--compare` names. */
    const inProcess = (name: string, run: (operator: string, namespace: string) => Command): Contender => ({
      name,
      async start(namespace, kubeconfig) {
        const [port] = await freePorts(1);
        const running = operatorProcess(
          withArgs(run('causeway-admission.ts', namespace), ['--webhook-listen', `127.0.0.1:${port}`]),
          kubeconfig,
        );
        return { running, target: await webhookOf(namespace) };
      },
    });
    /** `causeway gateway` calling `causeway serve`, of this commit or of the one `--compare` names. */
    const apart = (name: string, cli: Pick<Contenders, 'causewayGateway' | 'causewayServe'>): Contender => ({
      name,
      async start(namespace, kubeconfig) {
        const [port, functionsPort] = await freePorts(2);
        const running = await startTogether(
          [
            withArgs(cli.causewayGateway(functionsPort as number, namespace), [
              '--webhook-listen',
              `127.0.0.1:${port}`,
            ]),
            cli.causewayServe('causeway-admission.ts', functionsPort as number),
          ],
          { client, kubeconfig, namespace },
        );
        return { running, target: await webhookOf(namespace) };
      },
    });
    const all: Contender[] = [
      {
        name: KOPF_NAME,
        async start(namespace, kubeconfig) {
          const [port] = await freePorts(1);
          const command = commands.kopf('kopf_admission.py', namespace);
          const running = operatorProcess(
            { ...command, env: { ...process.env, BENCH_WEBHOOK_PORT: String(port) } },
            kubeconfig,
          );
          const url = `http://127.0.0.1:${port}/allow`;
          await until(
            'Kopf to answer reviews',
            async () => ((await answer({ url }, review(namespace))) ? true : undefined),
            {
              timeoutMs: 60_000,
              intervalMs: 200,
            },
          );
          return { running, target: { url } };
        },
      },
      inProcess('causeway', commands.causeway),
      ...(commands.baseline
        ? [inProcess(`causeway@${commands.baseline.ref}`, commands.baseline.causeway)]
        : []),
      ...(values['no-apart']
        ? []
        : [
            apart('causeway, functions apart', commands),
            ...(commands.baseline
              ? [apart(`causeway@${commands.baseline.ref}, functions apart`, commands.baseline)]
              : []),
          ]),
    ];
    const contenders = all.filter((contender) => !values.only || contender.name.startsWith(values.only));
    const results: Result[] = [];
    for (const [index, contender] of contenders.entries()) {
      const namespace = `admission-${index}`;
      await createNamespace(client, namespace);
      say(`${contender.name}: ${CONNECTIONS} connections for ${SECONDS} s`);
      const { running, target } = await contender.start(namespace, controlPlane.kubeconfigPath);
      try {
        const load = await hammer(target, review(namespace));
        const usage = pidsOf(running).map(processUsage);
        results.push({
          name: contender.name,
          transport: target.url.split(':')[0] as string,
          ...load,
          peakRssMiB: usage.map((each) => each.peakRssMiB),
          cpuSeconds: usage.map((each) => each.cpuSeconds),
        });
      } finally {
        await running.stop();
      }
    }
    report(results);
    await saveResults('admission', results);
  });
}

/** The webhook as the gateway configured it: its URL and the CA the apiserver is told to trust. */
async function causewayWebhook(client: KubeClient, namespace: string): Promise<Target> {
  const webhook = await until(
    `the validating webhook of ${namespace}`,
    async () => {
      const configuration = await ignoreNotFound(
        client.get<{
          webhooks?: Array<{
            clientConfig: { url: string; caBundle: string };
            namespaceSelector?: { matchExpressions: Array<{ values: string[] }> };
          }>;
        }>('/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/causeway.dev'),
      );
      return configuration?.webhooks?.find((each) =>
        each.namespaceSelector?.matchExpressions[0]?.values.includes(namespace),
      );
    },
    { timeoutMs: 60_000, intervalMs: 200 },
  );
  return {
    url: webhook.clientConfig.url,
    ca: Buffer.from(webhook.clientConfig.caBundle, 'base64').toString(),
  };
}

function review(namespace: string): string {
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: '705ab4f5-6393-11e8-b7cc-42010a800002',
      kind: { group: 'kopf.dev', version: 'v1', kind: 'KopfExample' },
      resource: { group: 'kopf.dev', version: 'v1', resource: 'kopfexamples' },
      requestKind: { group: 'kopf.dev', version: 'v1', kind: 'KopfExample' },
      requestResource: { group: 'kopf.dev', version: 'v1', resource: 'kopfexamples' },
      name: 'kex-1',
      namespace,
      operation: 'CREATE',
      userInfo: { username: 'admin', uid: '014fbff9a07c', groups: ['system:authenticated'] },
      object: {
        apiVersion: 'kopf.dev/v1',
        kind: 'KopfExample',
        metadata: { name: 'kex-1', namespace, uid: 'e911857d-c318-11e8-bbad-025000000001' },
        spec: { field: 'value', items: ['item1', 'item2'] },
      },
      oldObject: null,
      dryRun: false,
      options: { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' },
    },
  });
}

let agents = new Map<string, Agent>();

function agentFor(target: Target): Agent {
  let agent = agents.get(target.url);
  if (!agent) {
    agent = new Agent({
      connections: CONNECTIONS,
      pipelining: 1,
      ...(target.ca ? { connect: { ca: target.ca } } : {}),
    });
    agents.set(target.url, agent);
  }
  return agent;
}

/** One review: true when it was allowed. */
async function answer(target: Target, body: string): Promise<boolean> {
  try {
    // undici's request, not fetch: the load generator shares the machine with the server, and
    // fetch's streams cost it several times the CPU per request.
    const response = await request(target.url, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
      dispatcher: agentFor(target),
    });
    const parsed = (await response.body.json()) as { response?: { allowed?: boolean } };
    return response.statusCode === 200 && parsed.response?.allowed === true;
  } catch {
    return false;
  }
}

/** `CONNECTIONS` loops, each sending one review after the other for `SECONDS`. */
async function hammer(target: Target, body: string) {
  const latencies: number[] = [];
  let failures = 0;
  const ends = performance.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < ends) {
        const sent = performance.now();
        if (await answer(target, body)) latencies.push(performance.now() - sent);
        else failures++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  await Promise.all([...agents.values()].map((agent) => agent.close()));
  agents = new Map();
  return {
    reviews: latencies.length,
    failures,
    perSecond: latencies.length / elapsed,
    ms: percentiles(latencies),
  };
}

function report(results: Result[]): void {
  const baseline = results.find((result) => result.name.startsWith('kopf'));
  const rows = results.map((result) => [
    result.name,
    result.transport,
    `${result.perSecond.toFixed(0)}/s${baseline && baseline !== result ? ` (${(result.perSecond / baseline.perSecond).toFixed(2)}x)` : ''}`,
    ...(['p50', 'p90', 'p99', 'max'] as const).map((q) => `${result.ms[q].toFixed(1)} ms`),
    String(result.failures),
    `${result.peakRssMiB.map((mib) => mib.toFixed(0)).join(' + ')} MiB`,
    `${result.cpuSeconds.map((s) => s.toFixed(1)).join(' + ')} s`,
  ]);
  say(
    `\nAdmissionReviews straight to the webhook server: ${CONNECTIONS} keep-alive connections for ${SECONDS} s`,
  );
  for (const line of table(
    ['server', 'transport', 'reviews', 'p50', 'p90', 'p99', 'max', 'failed', 'peak RSS', 'CPU'],
    rows,
  ))
    say(line);
}

await main();
