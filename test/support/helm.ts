/**
 * helm (built by deploy/helm/build.ts, cached) against the test control plane, for the tests of the
 * Helm chart and of the values `causeway init` writes for it.
 */
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureHelm } from '../../deploy/helm/build.ts';
import { testCluster } from './cluster.ts';
import { type Manifest, parseYaml, type Run, run } from './kubectl.ts';

export async function helm(args: string[]): Promise<Run> {
  const { kubeconfigPath } = await testCluster();
  // Helm's own caches and config in a place of its own, not the user's.
  // test/setup.ts built it (CAUSEWAY_HELM): a first build takes longer than a test's timeout.
  return run(await ensureHelm(), [`--kubeconfig=${kubeconfigPath}`, ...args], '', {
    PATH: process.env.PATH,
    HOME: tmpdir(),
    HELM_CACHE_HOME: join(tmpdir(), 'causeway-helm'),
  });
}

export async function helmOk(args: string[]): Promise<string> {
  const result = await helm(args);
  assert.equal(result.code, 0, `helm ${args.join(' ')} failed:\n${result.stderr}${result.stdout}`);
  return result.stdout;
}

/** The objects `helm template` renders of `chart` for the release `name` in `namespace`, given `valuesFiles`. */
export async function helmTemplate(
  name: string,
  chart: string,
  namespace: string,
  valuesFiles: string[],
): Promise<Manifest[]> {
  const values = valuesFiles.flatMap((file) => ['--values', file]);
  const objects = parseYaml(await helmOk(['template', name, chart, '--namespace', namespace, ...values]));
  return objects.filter((object) => object !== null);
}
