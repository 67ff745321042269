/**
 * `causeway rbac` on the real apiserver: the RBAC it prints for a gateway of examples/01-minimal,
 * applied, is all that gateway needs: run as a process holding only that ServiceAccount's token, it
 * handles a KopfExample, and is refused nothing on the way.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { testNamespace } from '../support/cluster.ts';
import { applyRbac, parseYaml, writeServiceAccountKubeconfig } from '../support/kubectl.ts';
import { applyFile, createKopfExample, eventually, kubeClient } from '../support/operator.ts';
import { causeway } from '../support/processes.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);
const EXAMPLE = 'examples/01-minimal/operator.ts';
const SCOPE = 'test/fixtures/kopfexample-scope.yaml';
const SECRET = 'a-secret-shared-by-the-gateway-and-its-service-0123456789';
const ACCOUNT = 'causeway-gateway';

// Nothing to sign or verify with but what each command is given.
const { CAUSEWAY_SECRET: _unset, ...withoutSecret } = process.env;

function tempDirectory(t: TestContext): string {
  const directory = mkdtempSync(join(tmpdir(), 'causeway-rbac-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

/** `causeway rbac` with `args`: what it printed on stdout, apart from its log on stderr. */
async function rbac(args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [`${ROOT}gateway/cli/main.ts`, 'rbac', ...args],
    {
      cwd: ROOT,
      env: withoutSecret,
    },
  );
  return stdout;
}

describe('causeway rbac', () => {
  it("grants a gateway of examples/01-minimal all it needs: holding only its account's token, it handles a KopfExample", async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const directory = tempDirectory(t);
    const secretFile = join(directory, 'secret');
    writeFileSync(secretFile, SECRET);
    const service = causeway(
      ['serve', EXAMPLE, '--port', '0', '--host', '127.0.0.1', '--secret-file', secretFile],
      withoutSecret,
    );
    t.after(() => service.stop());
    const url = (await service.waitFor(/listening on (http:\/\/\S+)/))[1] as string;

    // The gateway's own flags, given to both: what it serves, where, and where it peers.
    const gatewayFlags = [
      '--functions',
      `kopfexample=${url}`,
      '--function-scope',
      `kopfexample=${SCOPE}`,
      '--namespace',
      namespace,
      '--peering-namespace',
      namespace,
      '--secret-file',
      secretFile,
    ];
    const objects = parseYaml(await rbac([...gatewayFlags, '--service-account', `${namespace}/${ACCOUNT}`]));
    assert.deepEqual(
      objects.map((object) => `${object.kind}/${object.metadata.name}`),
      [
        `ServiceAccount/${ACCOUNT}`,
        `Role/${ACCOUNT}`,
        `RoleBinding/${ACCOUNT}`,
        `ClusterRole/${ACCOUNT}-${namespace}`,
        `ClusterRoleBinding/${ACCOUNT}-${namespace}`,
      ],
    );
    await applyRbac(t, objects);

    const kubeconfig = join(directory, 'kubeconfig');
    await writeServiceAccountKubeconfig(kubeconfig, namespace, ACCOUNT);
    const gateway = causeway(['gateway', ...gatewayFlags], { ...withoutSecret, KUBECONFIG: kubeconfig });
    t.after(() => gateway.stop());

    const path = await createKopfExample(namespace, 'granted');
    const client = await kubeClient();
    const handled = await eventually(
      'status.create_fn',
      async () => {
        assert.doesNotMatch(gateway.output(), /[Ff]orbidden/, gateway.output()); // fail fast on a missing permission
        return (await client.get<{ status?: Record<string, unknown> }>(path)).status?.create_fn;
      },
      30_000,
    );
    assert.deepEqual(handled, { message: 'hello granted' });
    // It peered with that account (a Lease of its own where it was told), and stops cleanly.
    const leases = await client.get<{ items: unknown[] }>(
      `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
    );
    assert.ok(leases.items.length > 0, 'the gateway holds a Lease of peering');
    assert.equal(await gateway.stop(), 0, gateway.output());
    assert.doesNotMatch(gateway.output(), /[Ff]orbidden/, gateway.output());
  });
});
