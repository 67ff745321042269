/**
 * The two services deployed apart, as processes: `causeway serve` with the functions, `causeway gateway`
 * calling them over HTTP, one shared secret. The function service refuses whatever the gateway did not sign.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SignJWT } from 'jose';
import { type KubernetesObject, PATHS, signRequest } from '../../protocol/index.ts';
import { renewCertificates } from '../../webhooks/certificates.ts';
import { testNamespace } from '../support/cluster.ts';
import { kubectl } from '../support/kubectl.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  kubeClient,
  statusOnceThere,
} from '../support/operator.ts';
import { type CliProcess, causeway } from '../support/processes.ts';

const SECRET = 'the-shared-secret-of-the-cli-tests-0123456789';
const encoder = new TextEncoder();
const EXAMPLE = 'examples/01-minimal/operator.ts';
const SCOPE = 'test/fixtures/kopfexample-scope.yaml';

describe('causeway serve + causeway gateway', () => {
  let functions: CliProcess;
  let url: string;
  let functionMetrics: string;

  const { CAUSEWAY_SECRET: _unset, ...withoutSecret } = process.env;
  let secretFile: string;

  before(async () => {
    // The secret from a file only, as a mounted Secret gives it: none in the environment.
    secretFile = join(mkdtempSync(join(tmpdir(), 'causeway-cli-')), 'secret');
    writeFileSync(secretFile, `${SECRET}\n`);
    functions = causeway(
      [
        'serve',
        EXAMPLE,
        '--port',
        '0',
        '--host',
        '127.0.0.1',
        '--secret-file',
        secretFile,
        '--metrics',
        '127.0.0.1:0',
      ],
      withoutSecret,
    );
    functionMetrics = (await functions.waitFor(/metrics at (http:\/\/\S+)/))[1] as string;
    url = (await functions.waitFor(/listening on (http:\/\/\S+)/))[1] as string;
  });

  after(async () => {
    assert.equal(await functions.stop(), 0, 'the function service exits cleanly on SIGTERM');
  });

  async function invoke(
    headers: Record<string, string>,
    body: string,
  ): Promise<{ status: number; error: string }> {
    const response = await fetch(`${url}${PATHS.invoke}`, { method: 'POST', headers, body });
    return { status: response.status, error: ((await response.json()) as { error: string }).error };
  }

  const body = JSON.stringify({ protocol: 'causeway.dev/v1' });
  const sign = (audience: string, signedBody = body) =>
    signRequest(encoder.encode(SECRET), {
      audience,
      method: 'POST',
      path: PATHS.invoke,
      body: encoder.encode(signedBody),
    });

  it('answers its health check unsigned, naming itself', async () => {
    const response = await fetch(`${url}${PATHS.health}`);
    assert.deepEqual(await response.json(), {
      status: 'ok',
      protocol: 'causeway.dev/v1',
      name: 'kopfexample',
    });
  });

  it('refuses unsigned, expired, foreign-audience and tampered requests with 401 and the reason', async () => {
    assert.deepEqual(await invoke({}, body), {
      status: 401,
      error: 'unsigned request: expected "Authorization: Bearer <token>" from the gateway',
    });

    const now = Math.floor(Date.now() / 1000);
    const expired = await new SignJWT({ req: `POST ${PATHS.invoke}`, bsh: 'x' })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('causeway-gateway')
      .setAudience('kopfexample')
      .setIssuedAt(now - 120)
      .setExpirationTime(now - 90)
      .setJti('expired-1')
      .sign(encoder.encode(SECRET));
    assert.deepEqual(await invoke({ authorization: `Bearer ${expired}` }, body), {
      status: 401,
      error: 'token expired',
    });

    assert.deepEqual(await invoke({ authorization: `Bearer ${await sign('another-service')}` }, body), {
      status: 401,
      error: 'token is for another audience, not "kopfexample"',
    });

    const tampered = await invoke(
      { authorization: `Bearer ${await sign('kopfexample')}` },
      body.replace('v1', 'v2'),
    );
    assert.deepEqual(tampered, {
      status: 401,
      error: 'body does not match the signed digest: the request was altered',
    });
  });

  it('refuses a body over its limit with 413, before reading it or checking its signature', async () => {
    const response = await fetch(`${url}${PATHS.invoke}`, {
      method: 'POST',
      headers: { 'content-length': String(32 * 1024 * 1024) },
      body: new ReadableStream({ start: (controller) => controller.enqueue(new Uint8Array(1024)) }),
      duplex: 'half',
    } as RequestInit);
    assert.equal(response.status, 413);
    assert.equal(
      ((await response.json()) as { error: string }).error,
      'the body is larger than 16777216 bytes',
    );
  });

  it('handles objects for a gateway that holds the same secret, from its file, and counts them in its metrics', async (t) => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    const namespace = await testNamespace(t);
    const gateway = causeway(
      [
        'gateway',
        '--standalone',
        '--functions',
        `kopfexample=${url}`,
        '--function-scope',
        `kopfexample=${SCOPE}`,
        '--namespace',
        namespace,
        '--secret-file',
        secretFile,
        '--metrics',
        '127.0.0.1:0',
      ],
      withoutSecret,
    );
    t.after(() => gateway.stop());
    const metrics = (await gateway.waitFor(/metrics at (http:\/\/\S+)/))[1] as string;
    await gateway.waitFor(/watching .*path=\/apis\/kopf.dev\/v1\/namespaces\//);

    const client = await kubeClient();
    const path = await createKopfExample(namespace, 'over-http', { field: 'x' });
    const object = await eventually('status.create_fn', async () => {
      const current = await client.get<KubernetesObject>(path);
      return current.status?.create_fn === undefined ? undefined : current;
    });
    assert.deepEqual(object.status?.create_fn, { message: 'hello over-http' });
    const scraped = await (await fetch(metrics)).text();
    assert.match(
      scraped,
      /^causeway_handler_calls_total\{service="kopfexample",handler="create_fn",cause="create",outcome="success"\} 1$/m,
    );
    assert.match(scraped, /^causeway_function_requests_total\{service="kopfexample",code="200"\} [1-9]/m);
    assert.equal(await gateway.stop(), 0, 'the gateway exits cleanly on SIGTERM');
  });

  it('counts in its metrics what the function service answered, refused and ran', async () => {
    const scraped = await (await fetch(functionMetrics)).text();
    // The refusals above, and the object handled for the gateway.
    for (const reason of ['unsigned', 'expired', 'audience', 'body'])
      assert.match(scraped, new RegExp(`^causeway_service_refused_total\\{reason="${reason}"\\} [1-9]`, 'm'));
    assert.match(scraped, /^causeway_service_requests_total\{code="401"\} [1-9]/m);
    assert.match(
      scraped,
      /^causeway_service_handler_calls_total\{handler="create_fn",cause="create",outcome="success"\} [1-9]/m,
    );
  });

  it('refuses to start a gateway or a function service with nothing to sign or verify with, saying how to give it', async () => {
    for (const [args, said] of [
      [
        [
          'gateway',
          '--standalone',
          '--functions',
          `kopfexample=${url}`,
          '--function-scope',
          `kopfexample=${SCOPE}`,
        ],
        /no way to sign the calls to "kopfexample": give the gateway signing keys \(--signing-keys, settings.signing.keys\) or a secret shared with the service \(--secret-file\)/,
      ],
      [
        ['serve', EXAMPLE, '--port', '0'],
        /nothing to verify the gateway's calls with: pass --jwks-file \(the gateway's public keys\) or --secret-file, or set CAUSEWAY_JWKS, CAUSEWAY_JWKS_URL or CAUSEWAY_SECRET/,
      ],
    ] as const) {
      const started = causeway([...args], withoutSecret);
      assert.equal(await started.exited(), 1);
      assert.match(started.output(), said);
    }
  });
});

describe('causeway serve over HTTPS, and a gateway that trusts its CA', () => {
  it('handles objects with the CA given, and says why it cannot without it', async (t) => {
    const { certificates } = await renewCertificates(undefined, ['127.0.0.1']);
    const dir = mkdtempSync(join(tmpdir(), 'causeway-tls-'));
    const file = (name: string, content: string) => {
      writeFileSync(join(dir, name), content);
      return join(dir, name);
    };
    const [cert, key, ca] = [
      file('tls.crt', certificates.cert),
      file('tls.key', certificates.key),
      file('ca.crt', certificates.ca.cert),
    ];
    const env = { ...process.env, CAUSEWAY_SECRET: SECRET };
    const functions = causeway(
      ['serve', EXAMPLE, '--port', '0', '--host', '127.0.0.1', '--tls-cert', cert, '--tls-key', key],
      env,
    );
    t.after(() => functions.stop());
    const url = (await functions.waitFor(/listening on (https:\/\/\S+)/))[1] as string;

    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    const namespace = await testNamespace(t);
    const untrusting = causeway(
      [
        'gateway',
        '--standalone',
        '--functions',
        `kopfexample=${url}`,
        '--function-scope',
        `kopfexample=${SCOPE}`,
        '-n',
        namespace,
      ],
      env,
    );
    t.after(() => untrusting.stop());
    await untrusting.waitFor(
      /function service https:\/\/127\.0\.0\.1:\d+ is not reachable yet err=".+: its certificate is not one this gateway trusts for it \(give the CA that signed it: --functions-ca/,
    );
    await untrusting.stop();

    const gateway = causeway(
      [
        'gateway',
        '--standalone',
        '--functions',
        `kopfexample=${url}`,
        '--function-scope',
        `kopfexample=${SCOPE}`,
        '--functions-ca',
        ca,
        '-n',
        namespace,
      ],
      env,
    );
    t.after(() => gateway.stop());
    const path = await createKopfExample(namespace, 'over-https');
    assert.deepEqual(await statusOnceThere(path, 'create_fn'), { message: 'hello over-https' });
  });
});

describe('causeway crd', () => {
  it('prints the FunctionService definition, which the apiserver accepts and serves', async () => {
    const printed = causeway(['crd'], process.env);
    assert.equal(await printed.exited(), 0);
    const applied = await kubectl(
      ['apply', '--server-side', '--field-manager', 'causeway-tests', '-f', '-'],
      printed.output(),
    );
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(
      applied.stdout,
      /customresourcedefinition.apiextensions.k8s.io\/functionservices.causeway.dev serverside-applied/,
    );
    const served = await eventually('functionservices served', async () => {
      const listed = await kubectl(['api-resources', '--api-group', 'causeway.dev', '-o', 'name']);
      return listed.stdout.includes('functionservices.causeway.dev') ? listed.stdout : undefined;
    });
    assert.match(served, /functionservices\.causeway\.dev/);
  });
});

describe('the command line', () => {
  /** What `causeway <args>` prints, and its exit code. */
  async function run(args: string[]): Promise<{ code: number | NodeJS.Signals | null; output: string }> {
    const started = causeway(args, process.env);
    return { code: await started.exited(), output: started.output() };
  }

  it('refuses a flag of another command with a usage error that names the flag and the command', async () => {
    assert.deepEqual(await run(['serve', EXAMPLE, '--functions', 'kopfexample=http://127.0.0.1:8080']), {
      code: 2,
      output:
        'causeway serve: --functions is not an option of serve (it is one of gateway, explain and rbac)\n' +
        'Run `causeway serve --help` for usage.\n',
    });
    assert.deepEqual(await run(['crd', '-n', 'default']), {
      code: 2,
      output:
        'causeway crd: -n is not an option of crd (it is one of run, gateway, dev, explain, rbac and release)\n' +
        'Run `causeway crd --help` for usage.\n',
    });
  });

  it("shows in a command's help its own flags, and none of another command's", async () => {
    const serve = await run(['serve', '--help']);
    assert.equal(serve.code, 0);
    assert.match(serve.output, /^Usage: causeway serve <module> \[options\]\n/);
    for (const own of [
      '-p, --port <port>',
      '--tls-cert <file>',
      '--jwks-file <file>',
      '--secret-file <path>',
    ]) {
      assert.ok(serve.output.includes(own), own);
    }
    for (const foreign of ['--functions', '--namespace', '--webhook-listen', '--session-seconds']) {
      assert.ok(!serve.output.includes(foreign), foreign);
    }

    const gateway = await run(['gateway', '-h']);
    assert.equal(gateway.code, 0);
    assert.match(gateway.output, /^Usage: causeway gateway \[options\]\n/);
    for (const own of ['--functions <name>=<url>', '-n, --namespace <ns>', '--signing-keys <ns/name>']) {
      assert.ok(gateway.output.includes(own), own);
    }
    for (const foreign of ['--port', '--jwks-file', '--session-seconds', '--causeway']) {
      assert.ok(!gateway.output.includes(foreign), foreign);
    }

    // rbac takes every flag of gateway; those its RBAC does not follow are listed apart.
    const rbac = await run(['rbac', '--help']);
    assert.equal(rbac.code, 0);
    assert.match(rbac.output, /^Usage: causeway rbac \[<module>\] \[options\]\n/);
    const flagsPart = rbac.output.slice(0, rbac.output.indexOf('\nCommon options:'));
    const [followed, unused] = flagsPart.split(
      "The gateway's other flags, accepted without effect on its RBAC:",
    ) as [string, string];
    assert.ok(unused !== undefined, rbac.output);
    for (const own of ['-n, --namespace <ns>', '--signing-keys <ns/name>', '--dev-sessions <namespace>']) {
      assert.ok(followed.includes(own) && !unused.includes(own), own);
    }
    for (const other of [
      '--liveness <url>',
      '--webhook-listen <host:port>',
      '--allow-loopback-functions',
      '--metrics',
    ]) {
      assert.ok(unused.includes(other) && !followed.includes(other), other);
    }
  });

  it('lists every command in causeway --help', async () => {
    const { code, output } = await run(['--help']);
    assert.equal(code, 0);
    for (const usage of [
      'init <directory>',
      'run <module>',
      'serve <module>',
      'gateway',
      'dev <module>',
      'freeze',
      'resume',
      'conformance <url> --name <name>',
      'build <module> --target <target>',
      'crd',
      'release <resource> <name>',
    ]) {
      assert.match(output, new RegExp(`^  ${usage}(\\s|$)`, 'm'), usage);
    }
    assert.match(output, /^ {2}rbac \[<module>\]\s/m);
    assert.match(output, /^Run `causeway <command> --help` for the options of a command\.$/m);
  });
});
