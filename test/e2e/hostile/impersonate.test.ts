/**
 * --impersonate on the real apiserver: a gateway holding only its account's token, with the RBAC
 * `causeway rbac --impersonate` prints applied, reads (before the apply) and writes a service's
 * children and posts its events as the service's ServiceAccount. What the service's Role does not
 * allow the apiserver refuses (403), though the gateway's own scope check let it pass and the
 * gateway's own account could make it: the reason is in the log, nothing is written with the
 * gateway's rights, and the write is retried until the Role allows it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { KubeClient } from '../../../gateway/kube/client.ts';
import { isNotFound } from '../../../gateway/kube/errors.ts';
import { loadKubeConfig } from '../../../gateway/kube/kubeconfig.ts';
import type { KubernetesObject } from '../../../protocol/index.ts';
import { testNamespace } from '../../support/cluster.ts';
import {
  applyRbac,
  type Manifest,
  type PolicyRule,
  serviceAccount,
  writeServiceAccountKubeconfig,
  wrongPermissions,
} from '../../support/kubectl.ts';
import { applyFile, createKopfExample, eventually, kubeClient } from '../../support/operator.ts';
import { causeway, serveOnLoopback } from '../../support/processes.ts';
import { rbacObjects, withoutSecret } from '../../support/rbac.ts';

const CRD = new URL('../../../examples/01-minimal/crd.yaml', import.meta.url);
const SECRET = 'a-secret-shared-by-the-gateway-and-its-service-0123456789';
const GATEWAY = 'causeway-gateway';

interface Event {
  reason: string;
  involvedObject: { name: string };
}

/** `objects` with the service's Role (`role`) lacking the rules on `resources`. */
function withoutServiceRules(objects: Manifest[], role: string, resources: string[]): Manifest[] {
  return objects.map((object) =>
    object.kind === 'Role' && object.metadata.name === role
      ? {
          ...object,
          rules: (object.rules as PolicyRule[]).filter(
            (rule) => !rule.resources?.some((resource) => resources.includes(resource)),
          ),
        }
      : object,
  );
}

describe('a gateway run with --impersonate', () => {
  it("writes a service's children and events as its ServiceAccount, and what its Role does not allow is refused by the apiserver, never written with the gateway's rights", async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const directory = mkdtempSync(join(tmpdir(), 'causeway-impersonate-'));
    t.after(() => rmSync(directory, { recursive: true, force: true }));
    const secretFile = join(directory, 'secret');
    writeFileSync(secretFile, SECRET);
    const scopeFile = join(directory, 'scope.yaml');
    // The gateway's own check lets it apply Secrets; the account it writes them as is named here.
    writeFileSync(
      scopeFile,
      JSON.stringify({
        resources: ['kopfexamples.kopf.dev'],
        children: ['configmaps', 'secrets'],
        impersonate: `${namespace}/builder`,
      }),
    );
    const { url } = await serveOnLoopback(
      t,
      'test/fixtures/builder-operator.ts',
      ['--secret-file', secretFile],
      withoutSecret,
    );
    const gatewayFlags = [
      ...['--functions', `builder=${url}`, '--function-scope', `builder=${scopeFile}`, '--impersonate'],
      ...['--namespace', namespace, '--peering-namespace', namespace, '--secret-file', secretFile],
    ];
    const printed = await rbacObjects([...gatewayFlags, '--service-account', `${namespace}/${GATEWAY}`]);
    const role = `builder-${namespace}`;
    assert.deepEqual(
      printed.map((object) => `${object.kind}/${object.metadata.name}`),
      [
        `ServiceAccount/${GATEWAY}`,
        `Role/${GATEWAY}`,
        `RoleBinding/${GATEWAY}`,
        `ClusterRole/${GATEWAY}-${namespace}`,
        `ClusterRoleBinding/${GATEWAY}-${namespace}`,
        'ServiceAccount/builder',
        `Role/${role}`,
        `RoleBinding/${role}`,
      ],
    );
    // The service's Role first lacks Secrets and events; the gateway's own account may make both.
    await applyRbac(t, withoutServiceRules(printed, role, ['secrets', 'events']));
    await applyRbac(t, [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'gateway-secrets', namespace },
        rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['create', 'patch', 'get'] }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'gateway-secrets', namespace },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'gateway-secrets' },
        subjects: [{ kind: 'ServiceAccount', name: GATEWAY, namespace }],
      },
    ]);
    const gatewayUser = serviceAccount(namespace, GATEWAY);
    const builder = serviceAccount(namespace, 'builder');
    assert.deepEqual(
      await wrongPermissions([
        [gatewayUser, namespace, ['create', 'configmaps'], false],
        [gatewayUser, namespace, ['patch', 'configmaps'], false],
        [gatewayUser, namespace, ['create', 'secrets'], true],
        [gatewayUser, namespace, ['create', 'events'], true],
        [gatewayUser, namespace, ['impersonate', 'serviceaccounts/builder'], true],
        [gatewayUser, namespace, ['impersonate', 'serviceaccounts/default'], false],
        [gatewayUser, namespace, ['impersonate', 'groups/system:serviceaccounts'], false],
        [builder, namespace, ['create', 'configmaps'], true],
        [builder, namespace, ['create', 'secrets'], false],
      ]),
      [],
    );

    const kubeconfig = join(directory, 'kubeconfig');
    await writeServiceAccountKubeconfig(kubeconfig, namespace, GATEWAY);
    // As the apiserver sees the account the gateway acts as: with a ServiceAccount's groups, which it
    // adds itself (the gateway impersonates no group).
    const asGateway = await KubeClient.fromConfig(loadKubeConfig(kubeconfig));
    const review = await asGateway
      .impersonating({ namespace, name: 'builder' })
      .request<{ status: { userInfo: { username: string; groups: string[] } } }>(
        '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        { method: 'POST', body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } },
      );
    assert.equal(review.status.userInfo.username, builder);
    assert.deepEqual([...review.status.userInfo.groups].sort(), [
      'system:authenticated',
      'system:serviceaccounts',
      `system:serviceaccounts:${namespace}`,
    ]);

    const gateway = causeway(['gateway', ...gatewayFlags], { ...withoutSecret, KUBECONFIG: kubeconfig });
    t.after(() => gateway.stop());
    const client = await kubeClient();
    const read = async (path: string) => {
      try {
        return await client.get<KubernetesObject>(path);
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    };
    const events = async (name: string) =>
      (await client.get<{ items: Event[] }>(`/api/v1/namespaces/${namespace}/events`)).items.filter(
        (event) => event.reason === 'Built' && event.involvedObject.name === name,
      );
    const kopfexample = (name: string) => `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/${name}`;

    // Its child is made, though the gateway's own account may not make a ConfigMap: as the service.
    await createKopfExample(namespace, 'built');
    const child = await eventually('the child ConfigMap', () =>
      read(`/api/v1/namespaces/${namespace}/configmaps/built-settings`),
    );
    assert.deepEqual(
      (child.metadata.managedFields as Array<{ manager: string; operation: string }>).map(
        ({ manager, operation }) => [manager, operation],
      ),
      [['causeway', 'Apply']],
    );
    assert.deepEqual(
      await eventually('create_fn', async () => (await read(kopfexample('built')))?.status?.create_fn),
      {
        built: true,
      },
    );
    // Its event is refused (its Role lacks events), though the gateway's own account may post one.
    await gateway.waitFor(
      new RegExp(
        `could not post an event.*User \\\\"${builder}\\\\" cannot create resource \\\\"events\\\\".*written as ${builder} \\(--impersonate\\)`,
      ),
    );
    assert.deepEqual(await events('built'), [], 'no event posted with the gateway’s rights');

    // A Secret its scope allows and its Role does not: the apiserver refuses it to the account from the
    // read the gateway makes as the account before the apply (the gateway's own could read it), and
    // the gateway retries.
    await createKopfExample(namespace, 'wants-secret');
    await gateway.waitFor(
      new RegExp(`User \\\\"${builder}\\\\" cannot get resource \\\\"secrets\\\\"[^\\n]*read as ${builder}`),
    );
    assert.equal(await read(`/api/v1/namespaces/${namespace}/secrets/wants-secret-token`), undefined);
    assert.equal(
      (await read(kopfexample('wants-secret')))?.status?.create_fn,
      undefined,
      'not done: retried',
    );

    // Granted what it lacked, the next try makes the Secret and posts the event, as the service.
    await applyRbac(t, printed);
    const secret = await eventually(
      'the Secret, once the Role allows it',
      () => read(`/api/v1/namespaces/${namespace}/secrets/wants-secret-token`),
      60_000,
    );
    const owners = secret.metadata.ownerReferences as Array<{ name: string }>;
    assert.deepEqual(
      owners.map(({ name }) => name),
      ['wants-secret'],
    );
    assert.deepEqual(
      await eventually('create_fn', async () => (await read(kopfexample('wants-secret')))?.status?.create_fn),
      { built: true },
    );
    assert.equal(
      await eventually('the Built event', async () => (await events('wants-secret')).length || undefined),
      1,
    );
    assert.doesNotMatch(
      gateway.output(),
      new RegExp(`User \\\\"${gatewayUser}\\\\" cannot`),
      'the gateway itself was refused nothing',
    );
  });
});
