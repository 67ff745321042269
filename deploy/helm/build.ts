import { join } from 'node:path';
import { cacheRoot, KUBERNETES } from '../control-plane/build.ts';
import { cachedBinary } from '../control-plane/cached-binary.ts';
import { buildGoPrograms, type GoMainModule } from '../control-plane/go-build.ts';
import { type Progress, silent } from '../control-plane/progress.ts';

/** The latest helm on the control plane's Kubernetes libraries (1.34), whose build it shares. */
export const HELM_VERSION = 'v3.19.5';

const HELM: GoMainModule = {
  name: 'helm',
  path: 'helm.sh/helm/v3',
  version: HELM_VERSION,
  programs: [{ binary: 'helm', package: 'helm.sh/helm/v3/cmd/helm' }],
  // Without it `helm version` says v3.x-dev, and charts' kubeVersion checks see a development build.
  ldflags: ['-s', '-w', `-X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}`],
  // Built after the control plane with its versions, helm finds most of its packages (client-go,
  // apimachinery, the API types) compiled in Go's build cache: on a fresh 2-core machine 46 s after
  // the control plane (58 CPU-seconds of its own), where its own build took 327-392 s beside it.
  // pflag stays helm's own: helm calls ParseErrorsAllowlist, new in pflag 1.0.8.
  sharesBuildOf: { module: KUBERNETES, except: ['github.com/spf13/pflag'] },
};

/**
 * The helm binary: CAUSEWAY_HELM if set, else the cached build of HELM_VERSION, built from the Go module
 * proxy on first use, like the control plane's binaries. Built after them (ensureBinaries), it compiles
 * little of its own.
 */
export async function ensureHelm({ onProgress = silent }: { onProgress?: Progress } = {}): Promise<string> {
  if (process.env.CAUSEWAY_HELM) return process.env.CAUSEWAY_HELM;
  return cachedBinary(join(cacheRoot(), 'helm', HELM_VERSION), 'helm', {
    name: 'helm',
    from: `helm ${HELM_VERSION} from its Go module`,
    make: async ({ workDir, logPath }) =>
      join(await buildGoPrograms(HELM, HELM.programs, { workDir, logPath, onProgress }), 'helm'),
    onProgress,
  });
}
