#!/usr/bin/env node
/** `causeway`: run operators written with causeway/functions, as `kopf run` runs Kopf's. */
import { readFileSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { parse as parseYaml, stringify } from 'yaml';
import packageJson from '../../package.json' with { type: 'json' };
import {
  JWKS_URL_VARIABLE,
  JWKS_VARIABLE,
  type LogLevel,
  SECRET_VARIABLE,
  type ServiceScope,
} from '../../protocol/index.ts';
import { chooseMode, localReach, ngrokReach, type ReachMode } from '../../webhooks/reach.ts';
import { type ConformanceTarget, runConformance } from '../conformance/checks.ts';
import { parseScope } from '../dispatch/scope.ts';
import type { FunctionEndpoint } from '../dispatch/services.ts';
import { functionServiceDefinition } from '../engines/function-service-objects.ts';
import { livenessAddress } from '../engines/liveness.ts';
import { type GatewayOptions, startGateway } from '../gateway.ts';
import { DEFAULT_IDENTITY, type Identity } from '../identity.ts';
import { KubeClient } from '../kube/client.ts';
import { loadKubeConfig } from '../kube/kubeconfig.ts';
import { createLogger, type Logger } from '../logging.ts';
import { ensureProcessSecret } from '../secret.ts';
import type { SettingsPatch } from '../settings.ts';
import { KOPF_PREFIX } from '../state/kopf.ts';
import { dev } from './dev.ts';
import { init } from './init.ts';
import { loadOperatorModule } from './operator-module.ts';
import { release } from './release.ts';
import { currentSigningKey, provideVerificationKeys, readSecret, readSecretText } from './secret.ts';
import { serveFetch } from './serve.ts';

const VERSION = packageJson.version;

const HELP = `Usage: causeway <command> [options]

Commands:
  init <directory>      Create an operator project in a new or empty directory, named after it: one
                        handler, its test, a CRD, an example object, and manifests to deploy it.
  run <module>          Run an operator: its function service and a gateway in one process,
                        like \`kopf run\`. The module's default export is made with causeway/functions.
  serve <module>        Serve only the function service of a module over HTTP, for a gateway
                        deployed elsewhere. Needs the gateway's public keys (--jwks-file) or a
                        secret shared with it (--secret-file).
  gateway               Run only the gateway: watch the cluster and call the function services
                        given with --functions, signing with its keys (--signing-keys) or with
                        secrets shared with the services.
  dev <module>          Develop an operator: reloaded on save, with no restart of the gateway. Runs
                        a gateway of its own, as run does; or, with --dev-sessions, has a gateway
                        deployed in the cluster send the module's service's calls to this machine.
  conformance <url> --name <name>
                        Check a function service, in any language, against protocol v1: health,
                        manifest, a call per handler, the error model, and a refusal of every
                        forged request. Signs as the gateway: --signing-keys or --secret-file.
  crd                   Print the FunctionService CustomResourceDefinition, for
                        \`causeway crd | kubectl apply -f -\`.
  release <resource> <name>
                        Remove the gateway's finalizer from one object, without calling any
                        handler: for objects stuck in deletion after their operator is gone.

Options for run and gateway:
  -n, --namespace <ns>      Serve this namespace; repeat for several. Globs (team-*) and negations
                            (!kube-*) serve namespaces as they appear and disappear.
  -A, --all-namespaces      Serve every namespace (the default when no --namespace is given).
      --concurrency <n>     Objects processed at once, per resource (default 64).
      --functions <name>=<url>  (gateway) A function service: the name it must answer to (its calls
                            are signed for it) and its base URL; repeat for several.
      --signing-keys <ns/name>  (gateway, conformance) Sign calls with the gateway's Ed25519 keys,
                            kept in this Secret and published, public halves only, in the ConfigMap
                            of the same name (jwks.json) for the services to verify with. Made
                            there if missing; rotated with overlap, so no call is refused.
      --key-rotation-days <n>   (gateway) Make a new signing key when the newest is this old (30).
      --key-propagation-seconds <n>  (gateway) How long a new key is published before it signs:
                            the time the services take to see it (default 180).
      --secret-file <path>  (gateway) A secret shared with the services (HS256) instead of keys;
                            default $${SECRET_VARIABLE}.
      --function-secret <name>=<file>  (gateway) A secret shared with that service alone.
      --function-services <ns>  (gateway) Also serve the function services named by FunctionService
                            objects in this namespace, as they come, change and go; their status
                            says what the gateway found (see \`causeway crd\`). Their URLs may not
                            name a loopback or link-local host (the cloud metadata service).
      --allow-loopback-functions  (gateway) Let FunctionService objects name loopback and link-local
                            hosts: for a gateway on a developer's machine.
      --function-timeout <s>  Seconds one function call may take (default 30).
      --function-concurrency <n>  (gateway) Calls at once to one function service (default 128);
                            the others wait their turn.
      --functions-ca <file>  (gateway) The CA to trust for https function services (default: the
                            system's roots); not for one given --function-tls, pinned to the
                            gateway's own CA.
      --function-scope <name>=<file>  (gateway) What that service may reach, pinned: a YAML file
                            of resources (what its handlers watch, are sent and patch), admission
                            (what its webhooks review), children (the kinds its apply may create, in
                            the handled object's namespace) and namespaces (narrowing). Each
                            --functions service needs one, unless --unscoped. See docs/security.md.
      --unscoped            (gateway) Serve --functions services given no --function-scope: what
                            they answer is done with the gateway's rights (a warning names each).
      --function-tls <name>=<ns/secret>  (gateway) Issue that service a serving certificate for
                            the host of its https URL (<svc>.<ns>.svc, both forms) into this Secret,
                            which its pod mounts for serve --tls-cert/--tls-key; renewed before its
                            end. The service is then trusted with that CA's certificates only.
      --function-certificates <ns/name>  (gateway) Keep the CA that issues those certificates in
                            this Secret, made there at the first start, read by the gateway only.
      --allow-plain-http    (gateway) Call function services over plain HTTP beyond this host: only
                            where the network encrypts (a mesh); a warning names each such service.
                            Refused otherwise.
      --state-in <where>    Where to record that an object was handled: auto (the status when the
                            resource's status keeps it, else annotations; the default) or annotations.
      --adopt-kopf-state <prefix>  Take over from a Kopf operator that kept its state under this
                            annotation prefix (Kopf's default: ${KOPF_PREFIX}): what it handled
                            is not handled again, what changed since is an update. See
                            docs/migrating-from-kopf.md.

Activities (run, gateway), for operators with probe or login handlers (docs/activities.md):
      --liveness <url>      Serve a liveness endpoint, e.g. http://0.0.0.0:8080/healthz: 200 with the
                            probes' results while the gateway is healthy, 500 and why when it is not.
      --login-from <name>   Log in to the Kubernetes API with what that function service's login
                            handler gives, instead of the kubeconfig; its calls are then signed with
                            a secret shared with it (not --signing-keys, which live in the cluster).

Admission webhooks (run, gateway), for operators with validate or mutate handlers:
      --webhook-reach <how>             How the apiserver reaches the webhook server: local (a URL on this
                                        host), service (see below), ngrok (a tunnel; the authtoken from
                                        $NGROK_AUTHTOKEN or --ngrok-authtoken-secret), or auto (the
                                        default: service in a pod, local when the apiserver is on this
                                        host, ngrok otherwise).
      --webhook-listen <host:port>      Where the HTTPS webhook server listens (default 127.0.0.1:0, any
                                        port).
      --webhook-service <ns/name:port>  The Service through which the apiserver reaches it in a cluster
                                        (implies --webhook-reach service; listen on 0.0.0.0 then).
      --ngrok-authtoken-secret <ns/name>  The Secret whose key "authtoken" holds the ngrok authtoken.
      --ngrok-domain <domain>           A reserved ngrok domain, for a URL that stays the same.
      --webhook-certificates <ns/name>  Keep its certificates in this Secret, shared by restarts and
                                        replicas (default: in memory, new at every start).
      --webhook-cert-file <file>        Serve this certificate (with --webhook-key-file) instead of one the
                                        gateway makes, read again when it changes (cert-manager's way).
      --webhook-key-file <file>         Its private key.
      --webhook-ca-file <file>          What the apiserver is to trust for it (default: the certificate).
      --webhook-client-ca <file>        Answer only clients whose certificate this CA signed (the
                                        apiserver's, with its --admission-control-config-file).

Dev sessions (gateway, dev):
      --dev-sessions <namespace>  gateway: let dev sessions, Leases in this namespace, send a
                                  service's calls to a laptop while they are renewed, for a service
                                  that allows them (below, or its FunctionService's spec.devSessions);
                                  others are ignored with a warning. dev: hold such a Lease for the
                                  module's service there (or its FunctionService's devSession field),
                                  verifying calls with the gateway's public keys (--signing-keys
                                  <ns/name>, read from their ConfigMap) or its secret (--secret-file).
      --function-dev-sessions <name>=<url-glob>[,<url-glob>...]
                                  gateway: let dev sessions send that --functions service's calls to a
                                  URL matching one of these globs (* stands for characters other than
                                  / and :), e.g. billing=https://*.ngrok.app; repeat for several.
      --dev-session-max-seconds <n>  gateway: the longest such a session lasts without renewal,
                                  whatever it asks (default 3600).
      --session-seconds <n>       dev: the Lease's duration: after a crash, calls go back to the
                                  deployed service this long after the last renewal (default 15).
      --dev-reach <how>           dev: how the deployed gateway reaches this machine: local (it runs
                                  on this host), ngrok (a tunnel; $NGROK_AUTHTOKEN), or auto (the
                                  default: local when the apiserver is on this host, ngrok otherwise).

Identity (run, gateway, release), so that two deployments can serve the same objects:
      --status-key <key>          Key of the gateway's state under status (default causeway).
      --annotation-prefix <prefix>  Prefix of its annotations (default causeway.dev).
      --finalizer <name>          Its finalizer (default causeway.dev/finalizer).
      --field-manager <name>      The field manager of its writes (default causeway).

Options for serve:
  -p, --port <port>         Port to listen on (default 8080).
      --host <address>      Address to listen on (default 0.0.0.0).
      --tls-cert <file>     Serve HTTPS with this certificate (PEM), and --tls-key <file> its key;
                            both read again when they change (the Secret a gateway's
                            --function-tls renews, mounted), looked at every 10 s.
      --jwks-file <file>    Verify calls with the gateway's public keys in this file (its ConfigMap's
                            jwks.json, mounted), followed as it changes; default $${JWKS_VARIABLE},
                            then $${JWKS_URL_VARIABLE}.
      --secret-file <path>  Verify with a secret shared with the gateway; default $${SECRET_VARIABLE}.

Options for init:
      --causeway <spec>     The project's causeway dependency: a version range (default ^${VERSION}),
                            or the path of a package tarball or directory.

Common options:
  -v, --verbose             Log debug lines too.
  -q, --quiet               Log only warnings and errors.
  -h, --help                Show this help.
  -V, --version             Show Causeway's version.

The cluster is the current context of $KUBECONFIG or ~/.kube/config, or the in-cluster account.
`;

const OPTIONS = {
  namespace: { type: 'string', short: 'n', multiple: true },
  'all-namespaces': { type: 'boolean', short: 'A' },
  concurrency: { type: 'string' },
  functions: { type: 'string', multiple: true },
  'function-timeout': { type: 'string' },
  'functions-ca': { type: 'string' },
  'function-concurrency': { type: 'string' },
  'allow-plain-http': { type: 'boolean' },
  'allow-loopback-functions': { type: 'boolean' },
  'function-dev-sessions': { type: 'string', multiple: true },
  'dev-session-max-seconds': { type: 'string' },
  'function-tls': { type: 'string', multiple: true },
  'function-scope': { type: 'string', multiple: true },
  unscoped: { type: 'boolean' },
  'function-certificates': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'state-in': { type: 'string' },
  'adopt-kopf-state': { type: 'string' },
  liveness: { type: 'string' },
  'login-from': { type: 'string' },
  'webhook-reach': { type: 'string' },
  'webhook-listen': { type: 'string' },
  'ngrok-authtoken-secret': { type: 'string' },
  'ngrok-domain': { type: 'string' },
  'webhook-service': { type: 'string' },
  'webhook-certificates': { type: 'string' },
  'webhook-client-ca': { type: 'string' },
  'webhook-cert-file': { type: 'string' },
  'webhook-key-file': { type: 'string' },
  'webhook-ca-file': { type: 'string' },
  'dev-sessions': { type: 'string' },
  'function-services': { type: 'string' },
  'session-seconds': { type: 'string' },
  name: { type: 'string' },
  'dev-reach': { type: 'string' },
  'status-key': { type: 'string' },
  'annotation-prefix': { type: 'string' },
  finalizer: { type: 'string' },
  'field-manager': { type: 'string' },
  port: { type: 'string', short: 'p' },
  host: { type: 'string' },
  'secret-file': { type: 'string' },
  'function-secret': { type: 'string', multiple: true },
  'signing-keys': { type: 'string' },
  'key-rotation-days': { type: 'string' },
  'key-propagation-seconds': { type: 'string' },
  'jwks-file': { type: 'string' },
  causeway: { type: 'string' },
  verbose: { type: 'boolean', short: 'v' },
  quiet: { type: 'boolean', short: 'q' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'V' },
} satisfies ParseArgsConfig['options'];

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

class UsageError extends Error {}

export async function main(argv: string[]): Promise<void> {
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const [command, ...rest] = positionals;
  if (values.version) {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  if (values.help || !command) {
    process.stdout.write(HELP);
    return;
  }
  const logger = createLogger({ level: logLevel(values) });
  switch (command) {
    case 'init': {
      const [directory, ...extra] = rest;
      if (!directory || extra.length)
        throw new UsageError("init needs the new project's directory, e.g. causeway init my-operator");
      const written = await init(directory, { causeway: values.causeway });
      const here = resolve(directory) === process.cwd();
      process.stdout.write(
        `Created ${here ? `${basename(process.cwd())} here` : directory}:\n` +
          written.map((file) => `  ${file}\n`).join('') +
          `\nNext:\n  ${here ? '' : `cd ${directory} && `}npm install && npm test\n` +
          '  kubectl apply -f crd.yaml && npm start    # runs it against the cluster of your kubeconfig\n',
      );
      return;
    }
    case 'run':
      return run(requireModule(rest, 'run'), values, logger);
    case 'serve':
      return serveOnly(requireModule(rest, 'serve'), values, logger);
    case 'gateway':
      if (!values.functions?.length && !values['function-services'])
        throw new UsageError(
          `gateway needs at least one --functions ${ENDPOINT}, or --function-services <namespace>`,
        );
      return gatewayOnly((values.functions ?? []).map(functionEndpoint), values, logger);
    case 'crd':
      // For `causeway crd | kubectl apply -f -`: the FunctionService definition of this version.
      process.stdout.write(stringify(functionServiceDefinition()));
      return;
    case 'dev':
      return devCommand(requireModule(rest, 'dev'), values, logger);
    case 'conformance': {
      const [url, ...extra] = rest;
      if (!url || extra.length || !values.name) {
        throw new UsageError(
          'conformance needs the service URL and its name, e.g. causeway conformance http://127.0.0.1:8080 --name billing',
        );
      }
      const results = await runConformance({
        url,
        name: values.name,
        signing: await conformanceSigning(values),
        ...(values['functions-ca'] ? { ca: readFileSync(values['functions-ca'], 'utf8') } : {}),
        ...(values['function-concurrency']
          ? { concurrencyPerService: integer(values['function-concurrency'], '--function-concurrency') }
          : {}),
      });
      for (const { name, failure } of results) {
        process.stdout.write(failure ? `✘ ${name}\n    ${failure}\n` : `✔ ${name}\n`);
      }
      const failed = results.filter((result) => result.failure).length;
      process.stdout.write(`\n${results.length - failed} passed, ${failed} failed\n`);
      if (failed > 0) process.exitCode = 1;
      return;
    }
    case 'release': {
      const [resource, name, ...extra] = rest;
      if (!resource || !name || extra.length)
        throw new UsageError(
          'release needs a resource and a name, e.g. causeway release kex my-object -n default',
        );
      const { finalizer, fieldManager } = identityOf(values);
      process.stdout.write(
        `${await release({ resource, name, finalizer, fieldManager, ...(values.namespace?.[0] ? { namespace: values.namespace[0] } : {}) })}\n`,
      );
      return;
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

/** One process: the gateway calls the module's fetch handler directly, still signed and verified. */
async function run(module: string, values: Values, logger: Logger): Promise<void> {
  const secret = ensureProcessSecret();
  const functions = await loadOperatorModule(module);
  const gateway = await startGateway({ ...gatewayOptions(values, logger), functions: [functions], secret });
  await untilSignal(logger);
  await gateway.stop();
}

async function serveOnly(module: string, values: Values, logger: Logger): Promise<void> {
  // Where causeway/functions looks for them; refused at start rather than answered with a 500 later.
  const stopFollowing = provideVerificationKeys({
    jwksFile: values['jwks-file'],
    secretFile: values['secret-file'],
  });
  const [cert, key] = [values['tls-cert'], values['tls-key']];
  if ((cert === undefined) !== (key === undefined))
    throw new UsageError('--tls-cert and --tls-key go together');
  const server = await serveFetch(await loadOperatorModule(module), {
    port: integer(values.port ?? '8080', '--port'),
    host: values.host ?? '0.0.0.0',
    ...(cert && key ? { tls: { certFile: cert, keyFile: key } } : {}),
    logger,
  });
  logger.info(`function service listening on ${server.url}`);
  if (process.send) {
    // Started by `causeway dev`, which asks where, and whose end (even by SIGKILL) is this one's.
    process.send({ listening: server.url });
    await Promise.race([untilSignal(logger), new Promise((resolve) => process.once('disconnect', resolve))]);
  } else {
    await untilSignal(logger);
  }
  stopFollowing();
  await server.close();
}

const ENDPOINT = '<name>=<url>';

/** `billing=http://billing-functions:8080`: the service's name is pinned, not learnt from the service. */
function functionEndpoint(value: string): FunctionEndpoint {
  const match = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)=(https?:\/\/.+)$/.exec(value);
  if (!match) {
    throw new UsageError(
      `--functions expects ${ENDPOINT}, the service's name and its URL (e.g. kopfexample=http://kopfexample-functions:8080), got "${value}"`,
    );
  }
  return { name: match[1] as string, url: match[3] as string };
}

async function gatewayOnly(functions: FunctionEndpoint[], values: Values, logger: Logger): Promise<void> {
  const own = perService(
    values['function-secret'],
    '--function-secret',
    '<name>=<file>',
    functions,
    (file) => file,
  );
  const certificates = perService(
    values['function-tls'],
    '--function-tls',
    '<name>=<namespace>/<secret>',
    functions,
    (secret) => namespacedName(secret, '--function-tls'),
  );
  if (certificates.size > 0 && !values['function-certificates'])
    throw new UsageError(
      '--function-tls needs --function-certificates <ns/name>, the Secret of the CA that issues them',
    );
  const devSessions = perService(
    values['function-dev-sessions'],
    '--function-dev-sessions',
    '<name>=<url-glob>[,<url-glob>...], e.g. billing=https://*.ngrok.app',
    functions,
    (globs) => {
      const urls = globs.split(',');
      return urls.every((glob) => /^https?:\/\/[^?#@\s]+$/.test(glob)) ? urls : undefined;
    },
  );
  const maxSeconds = values['dev-session-max-seconds'];
  const sessionSeconds =
    maxSeconds === undefined ? undefined : integer(maxSeconds, '--dev-session-max-seconds');
  if (sessionSeconds !== undefined && sessionSeconds < 1)
    throw new UsageError('--dev-session-max-seconds expects at least 1');
  const scopes = perService(
    values['function-scope'],
    '--function-scope',
    '<name>=<file>',
    functions,
    scopeFile,
  );
  const login = values['login-from'];
  if (login !== undefined && !functions.some((endpoint) => endpoint.name === login))
    throw new UsageError(`--login-from names "${login}", which no --functions gives`);
  const secret =
    values['secret-file'] || process.env[SECRET_VARIABLE] ? readSecret(values['secret-file']) : undefined;
  const gateway = await startGateway({
    ...gatewayOptions(values, logger),
    functions: functions.map((endpoint) => {
      const file = own.get(endpoint.name);
      const certificate = certificates.get(endpoint.name);
      const scope = scopes.get(endpoint.name);
      const urls = devSessions.get(endpoint.name);
      return {
        ...endpoint,
        ...(file ? { secret: readSecret(file) } : {}),
        ...(certificate ? { certificate } : {}),
        ...(scope ? { scope } : {}),
        ...(urls ? { devSessions: { urls, ...(sessionSeconds ? { maxSeconds: sessionSeconds } : {}) } } : {}),
      };
    }),
    ...(secret ? { secret } : {}),
  });
  await untilSignal(logger);
  await gateway.stop();
}

/**
 * A per-service flag's values (`<name>=<value>`, `expects` saying what the value is), by service name,
 * each read by `parse` (undefined: malformed) and naming a --functions service.
 */
function perService<T>(
  given: readonly string[] | undefined,
  flag: string,
  expects: string,
  functions: readonly FunctionEndpoint[],
  parse: (value: string, name: string) => T | undefined,
): Map<string, T> {
  const values = new Map<string, T>();
  for (const each of given ?? []) {
    const match = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)=(.+)$/.exec(each);
    const [name, value] = match ? [match[1] as string, match[3] as string] : [];
    const parsed = name === undefined || value === undefined ? undefined : parse(value, name);
    if (name === undefined || parsed === undefined)
      throw new UsageError(`${flag} expects ${expects}, got "${each}"`);
    if (!functions.some((endpoint) => endpoint.name === name))
      throw new UsageError(`${flag} names "${name}", which no --functions gives`);
    values.set(name, parsed);
  }
  return values;
}

/** The scope pinned for service `name` in `file` (`/etc/causeway/billing-scope.yaml`), read and checked. */
function scopeFile(file: string, name: string): ServiceScope {
  try {
    return parseScope(parseYaml(readFileSync(file, 'utf8')), `the scope of "${name}" in ${file}`);
  } catch (error) {
    throw new UsageError(`--function-scope ${name}: ${error instanceof Error ? error.message : error}`);
  }
}

/** What conformance signs with: the gateway's newest key from its Secret, or a shared secret. */
async function conformanceSigning(values: Values): Promise<ConformanceTarget['signing']> {
  const keys = values['signing-keys'];
  if (!keys) return { secret: readSecret(values['secret-file']) };
  const client = await KubeClient.fromConfig(loadKubeConfig());
  return { key: await currentSigningKey(client, namespacedName(keys, '--signing-keys')) };
}

async function devCommand(module: string, values: Values, logger: Logger): Promise<void> {
  const namespace = values['dev-sessions'];
  const gateway = gatewayOptions({ ...values, 'dev-sessions': undefined }, logger);
  const serveArgs = values.verbose ? ['--verbose'] : values.quiet ? ['--quiet'] : [];
  if (!namespace) {
    ensureProcessSecret();
    const secret = process.env[SECRET_VARIABLE] as string;
    return dev({ module, verification: { secret }, serveArgs, logger, gateway, until: untilSignal(logger) });
  }
  const kubeconfig = loadKubeConfig();
  const server = kubeconfig.getCurrentCluster()?.server;
  if (!server) throw new Error('dev --dev-sessions needs a cluster: the kubeconfig names none');
  const reachMode = values['dev-reach'] ?? 'auto';
  if (reachMode !== 'auto' && reachMode !== 'local' && reachMode !== 'ngrok') {
    throw new UsageError(`--dev-reach expects auto, local or ngrok, got "${reachMode}"`);
  }
  const mode = chooseMode(reachMode, { inPod: false, apiserverHost: new URL(server).hostname });
  const seconds = integer(values['session-seconds'] ?? '15', '--session-seconds');
  if (seconds < 3) throw new UsageError('--session-seconds expects at least 3');
  const keys = values['signing-keys'];
  return dev({
    module,
    verification: keys
      ? { publicKeys: namespacedName(keys, '--signing-keys') }
      : { secret: readSecretText(values['secret-file']) },
    serveArgs,
    logger,
    gateway,
    until: untilSignal(logger),
    session: {
      namespace,
      durationSeconds: seconds,
      reach:
        mode === 'ngrok'
          ? ngrokReach(values['ngrok-domain'] ? { domain: values['ngrok-domain'] } : {})
          : localReach(),
      annotationPrefix: identityOf(values).annotationPrefix,
      kubeconfig,
    },
  });
}

function gatewayOptions(values: Values, logger: Logger): Omit<GatewayOptions, 'functions' | 'secret'> {
  if (values.namespace?.length && values['all-namespaces']) {
    throw new UsageError('--namespace and --all-namespaces exclude each other');
  }
  if (!values.namespace?.length && !values['all-namespaces']) {
    logger.warning('neither --namespace nor --all-namespaces given: serving all namespaces');
  }
  const stateIn = values['state-in'] ?? 'auto';
  if (stateIn !== 'auto' && stateIn !== 'annotations') {
    throw new UsageError(`--state-in expects auto or annotations, got "${stateIn}"`);
  }
  const adoptKopf = values['adopt-kopf-state'];
  if (adoptKopf !== undefined && !DNS_SUBDOMAIN.test(adoptKopf)) {
    throw new UsageError(
      `--adopt-kopf-state expects the annotation prefix of the Kopf operator's state (Kopf's default: ${KOPF_PREFIX}), got "${adoptKopf}"`,
    );
  }
  return {
    logger,
    identity: identityOf(values),
    ...(values.namespace?.length ? { namespaces: values.namespace } : {}),
    ...(values['dev-sessions'] ? { devSessions: values['dev-sessions'] } : {}),
    ...(values['function-services'] ? { functionServices: values['function-services'] } : {}),
    ...(values.liveness ? { liveness: livenessUrl(values.liveness) } : {}),
    ...(values['login-from'] ? { loginFrom: values['login-from'] } : {}),
    settings: {
      persistence: { stateIn, ...(adoptKopf === undefined ? {} : { adoptKopf }) },
      ...(values.concurrency
        ? { processing: { concurrency: integer(values.concurrency, '--concurrency') } }
        : {}),
      calls: {
        ...(values['function-timeout']
          ? { timeoutMs: integer(values['function-timeout'], '--function-timeout') * 1000 }
          : {}),
        ...(values['functions-ca'] ? { ca: readFileSync(values['functions-ca'], 'utf8') } : {}),
        ...(values['function-concurrency']
          ? { concurrencyPerService: integer(values['function-concurrency'], '--function-concurrency') }
          : {}),
        ...(values['allow-plain-http'] ? { plainHttp: true } : {}),
        ...(values.unscoped ? { unscoped: true } : {}),
        ...(values['allow-loopback-functions'] ? { allowLoopback: true } : {}),
        ...(values['function-certificates']
          ? {
              certificateAuthority: namespacedName(
                values['function-certificates'],
                '--function-certificates',
              ),
            }
          : {}),
      },
      admission: admissionSettings(values),
      signing: signingSettings(values),
    },
  };
}

/** The URL, once the liveness endpoint could listen there. */
function livenessUrl(url: string): string {
  try {
    livenessAddress(url);
  } catch (error) {
    throw new UsageError(`--liveness: ${(error as Error).message}`);
  }
  return url;
}

function signingSettings(values: Values): SettingsPatch['signing'] {
  const keys = values['signing-keys'];
  const days = values['key-rotation-days'];
  const seconds = values['key-propagation-seconds'];
  // Not 0: every key would be due for replacement as it is made, a new one at every look, without end.
  if (days && integer(days, '--key-rotation-days') < 1)
    throw new UsageError('--key-rotation-days expects at least 1');
  return {
    ...(keys ? { keys: namespacedName(keys, '--signing-keys') } : {}),
    ...(days ? { rotateAfterMs: integer(days, '--key-rotation-days') * 24 * 3600_000 } : {}),
    ...(seconds ? { propagationMs: integer(seconds, '--key-propagation-seconds') * 1000 } : {}),
  };
}

function admissionSettings(values: Values): SettingsPatch['admission'] {
  const settings: SettingsPatch['admission'] = {};
  const listen = values['webhook-listen'];
  if (listen !== undefined) {
    const match = /^(.+):(\d+)$/.exec(listen);
    if (!match) throw new UsageError(`--webhook-listen expects host:port, got "${listen}"`);
    settings.listen = {
      host: (match[1] as string).replace(/^\[|\]$/g, ''),
      port: integer(match[2] as string, '--webhook-listen'),
    };
  }
  const service = values['webhook-service'];
  if (service !== undefined) {
    const match = /^([a-z0-9-]+)\/([a-z0-9-]+):(\d+)$/.exec(service);
    if (!match) throw new UsageError(`--webhook-service expects namespace/name:port, got "${service}"`);
    settings.reach = 'service';
    settings.service = {
      namespace: match[1] as string,
      name: match[2] as string,
      port: integer(match[3] as string, '--webhook-service'),
    };
  }
  const secret = values['webhook-certificates'];
  if (secret !== undefined) settings.certificates = namespacedName(secret, '--webhook-certificates');
  const reach = values['webhook-reach'];
  if (reach !== undefined) {
    if (!REACH_MODES.includes(reach as ReachMode)) {
      throw new UsageError(`--webhook-reach expects ${REACH_MODES.join(', ')}, got "${reach}"`);
    }
    settings.reach = reach as ReachMode;
  }
  const tokenSecret = values['ngrok-authtoken-secret'];
  const domain = values['ngrok-domain'];
  if (tokenSecret !== undefined || domain !== undefined) {
    settings.ngrok = {
      ...(tokenSecret !== undefined
        ? { authtokenSecret: namespacedName(tokenSecret, '--ngrok-authtoken-secret') }
        : {}),
      ...(domain !== undefined ? { domain } : {}),
    };
  }
  const [cert, key, ca] = [
    values['webhook-cert-file'],
    values['webhook-key-file'],
    values['webhook-ca-file'],
  ];
  if (cert !== undefined || key !== undefined || ca !== undefined) {
    if (cert === undefined || key === undefined) {
      throw new UsageError('--webhook-cert-file and --webhook-key-file go together');
    }
    settings.certificateFiles = {
      cert: resolve(cert),
      key: resolve(key),
      ...(ca ? { ca: resolve(ca) } : {}),
    };
  }
  const clientCa = values['webhook-client-ca'];
  if (clientCa !== undefined) settings.clientCa = readFileSync(clientCa, 'utf8');
  return settings;
}

const REACH_MODES: readonly ReachMode[] = ['auto', 'local', 'service', 'ngrok'];
/** What an annotation's prefix may be: a DNS subdomain. */
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function namespacedName(value: string, flag: string): { namespace: string; name: string } {
  const match = /^([a-z0-9-]+)\/([a-z0-9.-]+)$/.exec(value);
  if (!match) throw new UsageError(`${flag} expects namespace/name, got "${value}"`);
  return { namespace: match[1] as string, name: match[2] as string };
}

function identityOf(values: Values): Identity {
  return {
    statusKey: values['status-key'] ?? DEFAULT_IDENTITY.statusKey,
    annotationPrefix: values['annotation-prefix'] ?? DEFAULT_IDENTITY.annotationPrefix,
    finalizer: values.finalizer ?? DEFAULT_IDENTITY.finalizer,
    fieldManager: values['field-manager'] ?? DEFAULT_IDENTITY.fieldManager,
  };
}

function requireModule(rest: string[], command: string): string {
  const [module, ...extra] = rest;
  if (!module)
    throw new UsageError(
      `${command} needs the operator module's path, e.g. causeway ${command} ./operator.ts`,
    );
  if (extra.length) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
  return module;
}

function integer(value: string, flag: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0)
    throw new UsageError(`${flag} expects a whole number, got "${value}"`);
  return number;
}

function logLevel(values: Values): LogLevel {
  if (values.verbose) return 'debug';
  return values.quiet ? 'warning' : 'info';
}

/** Resolves on the first SIGINT or SIGTERM; a second one exits at once. */
export function untilSignal(logger: Logger): Promise<void> {
  return new Promise((resolve) => {
    const stop = (signal: string) => {
      logger.info(`${signal} received, stopping`);
      process.once('SIGINT', () => process.exit(130));
      process.once('SIGTERM', () => process.exit(143));
      resolve();
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
}

/** Runs the command line as the `causeway` command does: errors become one line and an exit code. */
export async function cli(argv: string[]): Promise<void> {
  try {
    await main(argv);
  } catch (error) {
    process.stderr.write(`causeway: ${error instanceof Error ? error.message : error}\n`);
    if (error instanceof UsageError) process.stderr.write('Run `causeway --help` for usage.\n');
    process.exit(error instanceof UsageError ? 2 : 1);
  }
}

if (import.meta.main) await cli(process.argv.slice(2));
