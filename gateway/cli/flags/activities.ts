import { livenessAddress } from '../../health/endpoint.ts';
import { flag, group, UsageError } from '../command-line.ts';

/** For operators with probe or login handlers (run, gateway, dev). */
export const ACTIVITIES = group(
  'Activities, for operators with probe or login handlers (docs/activities.md)',
  flag({
    name: 'liveness',
    value: '<url>',
    description:
      "Serve a liveness endpoint, e.g. http://0.0.0.0:8080/healthz: 200 with the probes' results while the gateway is healthy, 500 and why when it is not.",
  }),
  flag({
    name: 'login-from',
    value: '<name>',
    description:
      "Log in to the Kubernetes API with what that function service's login handler gives, instead of the kubeconfig; its calls are then signed with a secret shared with it (not --signing-keys, which live in the cluster).",
  }),
);

/** The URL, once the liveness endpoint could listen there. */
export function livenessUrl(url: string): string {
  try {
    livenessAddress(url);
  } catch (error) {
    throw new UsageError(`--liveness: ${(error as Error).message}`);
  }
  return url;
}
