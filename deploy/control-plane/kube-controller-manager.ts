import { join } from 'node:path';
import { type ApiTarget, apiRequest } from './https.ts';
import { type OnSpawn, supervise } from './processes.ts';
import { untilReady } from './readiness.ts';

/** Only the controllers that work without nodes and that operators rely on. */
const CONTROLLERS = ['garbage-collector-controller', 'namespace-controller', 'serviceaccount-controller'];

export async function startKubeControllerManager(
  binary: string,
  {
    dir,
    kubeconfigPath,
    api,
    onSpawn,
  }: { dir: string; kubeconfigPath: string; api: ApiTarget; onSpawn: OnSpawn },
): Promise<void> {
  const controllerManager = await supervise(
    'kube-controller-manager',
    binary,
    [
      `--kubeconfig=${kubeconfigPath}`,
      `--controllers=${CONTROLLERS.join(',')}`,
      '--leader-elect=false',
      '--secure-port=0',
      '--use-service-account-credentials=false',
    ],
    { logPath: join(dir, 'kube-controller-manager.log') },
  );
  onSpawn(controllerManager);
  // It serves no health endpoint with --secure-port=0; the service account controller giving the
  // default namespace its default ServiceAccount shows that it is connected and its controllers run.
  await untilReady(controllerManager, 'the default ServiceAccount in namespace default', async () => {
    const response = await apiRequest(api, 'GET', '/api/v1/namespaces/default/serviceaccounts/default');
    return response.status === 200 ? true : undefined;
  });
}
