/**
 * The log as a log pipeline reads it: `causeway serve` and `causeway gateway` started as a user starts
 * them, their stderr not a terminal, so JSON by default; every line parsed, the keys of Kubernetes'
 * structured logging on the lines about an object, and no secret anywhere, at the debug level.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { testNamespace } from '../support/cluster.ts';
import { applyFile, createKopfExample, kubeClient, statusOnceThere } from '../support/operator.ts';
import { type CliProcess, causeway } from '../support/processes.ts';

const SECRET = 'the-shared-secret-of-the-log-tests-0123456789';
const MODULE = 'test/fixtures/credentials-operator.ts';

type Line = Record<string, unknown> & { level: string; time: string; msg: string };

/** Every line a process wrote, parsed: a line that is not a JSON object fails the test. */
function jsonLines(process: CliProcess): Line[] {
  return process
    .output()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const parsed = JSON.parse(line) as Line;
      assert.ok(typeof parsed === 'object' && parsed !== null, line);
      assert.ok(['debug', 'info', 'warning', 'error'].includes(parsed.level), line);
      assert.match(parsed.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, line);
      assert.equal(typeof parsed.msg, 'string', line);
      return parsed;
    });
}

describe('the log, as JSON', () => {
  it('is one object per line with the structured keys, and holds neither the signing secret nor a Secret’s value', async (t) => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    const namespace = await testNamespace(t);
    const directory = mkdtempSync(join(tmpdir(), 'causeway-logs-'));
    const secretFile = join(directory, 'secret');
    writeFileSync(secretFile, `${SECRET}\n`);
    const scopeFile = join(directory, 'scope.yaml');
    writeFileSync(scopeFile, 'resources: [kopfexamples.kopf.dev]\nchildren: [secrets]\n');
    // As deployed: no terminal, no log format chosen, the secret from a file only.
    const { CAUSEWAY_SECRET: _secret, CAUSEWAY_LOG_FORMAT: _format, ...environment } = process.env;

    const service = causeway(
      [
        'serve',
        MODULE,
        '--port',
        '0',
        '--host',
        '127.0.0.1',
        '--secret-file',
        secretFile,
        '--log-level',
        'debug',
      ],
      environment,
    );
    t.after(() => service.stop());
    const url = (
      await service.waitFor(/"msg":"function service listening on (http:\/\/[^"]+)"/)
    )[1] as string;
    const gateway = causeway(
      [
        'gateway',
        '--standalone',
        '--functions',
        `keeper=${url}`,
        '--function-scope',
        `keeper=${scopeFile}`,
        '--namespace',
        namespace,
        '--secret-file',
        secretFile,
        '--log-level',
        'debug',
      ],
      environment,
    );
    t.after(() => gateway.stop());

    const password = `pw-${crypto.randomUUID()}`;
    const path = await createKopfExample(namespace, 'guarded', { password });
    assert.deepEqual(await statusOnceThere(path, 'create_fn'), { secret: 'guarded-credentials' });
    const child = await (await kubeClient()).get<{ data: Record<string, string> }>(
      `/api/v1/namespaces/${namespace}/secrets/guarded-credentials`,
    );
    const encoded = Buffer.from(password).toString('base64');
    assert.equal(child.data.password, encoded, 'the value went through the gateway');
    assert.equal(await gateway.stop(), 0);
    assert.equal(await service.stop(), 0);

    const logged = jsonLines(gateway);
    const succeeded = logged.find((line) => line.msg === 'handler succeeded');
    assert.ok(succeeded, gateway.output());
    const { time: _time, idempotencyKey, traceId, ...keys } = succeeded;
    assert.deepEqual(keys, {
      level: 'info',
      resource: 'kopfexamples.kopf.dev/v1',
      object: `${namespace}/guarded`,
      cause: 'create',
      handler: 'create_fn',
      service: 'keeper',
      retry: 0,
      msg: 'handler succeeded',
    });
    assert.match(String(idempotencyKey), /^[\w-]{32}$/);
    assert.match(String(traceId), /^[0-9a-f]{32}$/);
    const forwarded = logged.find((line) => line.msg === 'making the credentials');
    assert.deepEqual(
      forwarded && { object: forwarded.object, handler: forwarded.handler, traceId: forwarded.traceId },
      { object: `${namespace}/guarded`, handler: 'create_fn', traceId },
      "the service's line keeps its handler and the call's trace",
    );
    assert.ok(jsonLines(service).length > 0);

    for (const [name, process] of [
      ['gateway', gateway],
      ['function service', service],
    ] as const) {
      for (const secret of [SECRET, password, encoded])
        assert.ok(!process.output().includes(secret), `the ${name}'s log holds no secret`);
    }
  });
});
