import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { executableName, type GoMainModule, requirements, sharedVersions, wrapperGoMod } from './go-build.ts';

const KUBE_GO_MOD = `module k8s.io/kubernetes

go 1.24.0

godebug default=go1.24

require (
\tgithub.com/spf13/pflag v1.0.6
\tgolang.org/x/net v0.38.0
\tk8s.io/api v0.0.0
\tk8s.io/client-go v0.0.0 // indirect
)

require go.etcd.io/etcd/client/v3 v3.6.4

replace k8s.io/api => ./staging/src/k8s.io/api
`;

const KUBE: GoMainModule = {
  name: 'kube',
  path: 'k8s.io/kubernetes',
  version: 'v1.34.10',
  stagingVersion: 'v0.34.10',
  programs: [],
  tags: ['selinux'],
  ldflags: [],
};

const HELM: GoMainModule = {
  name: 'helm',
  path: 'helm.sh/helm/v3',
  version: 'v3.19.5',
  programs: [],
  ldflags: [],
  sharesBuildOf: { module: KUBE, except: ['github.com/spf13/pflag'] },
};

describe('the wrapper module of a Go build', () => {
  it('reads the requirements of a go.mod, in blocks and alone, without its replacements', () => {
    assert.deepEqual(requirements(KUBE_GO_MOD), [
      { path: 'github.com/spf13/pflag', version: 'v1.0.6' },
      { path: 'golang.org/x/net', version: 'v0.38.0' },
      { path: 'k8s.io/api', version: 'v0.0.0' },
      { path: 'k8s.io/client-go', version: 'v0.0.0' },
      { path: 'go.etcd.io/etcd/client/v3', version: 'v3.6.4' },
    ]);
  });

  it("takes Kubernetes' in-tree modules at their published version", () => {
    const goMod = wrapperGoMod(KUBE, KUBE_GO_MOD);
    assert.match(goMod, /^go 1\.24\.0$/m);
    assert.match(goMod, /^godebug default=go1\.24$/m);
    assert.match(goMod, /^require k8s\.io\/kubernetes v1\.34\.10$/m);
    assert.match(goMod, /^\tk8s\.io\/api => k8s\.io\/api v0\.34\.10$/m);
    assert.match(goMod, /^\tk8s\.io\/client-go => k8s\.io\/client-go v0\.34\.10$/m);
    assert.doesNotMatch(goMod, /x\/net =>/);
  });

  it("pins a module sharing another's build to that one's versions, but for the exceptions", () => {
    const helmGoMod = 'module helm.sh/helm/v3\n\ngo 1.24.0\n\nrequire golang.org/x/net v0.47.0\n';
    const shared = HELM.sharesBuildOf;
    assert.ok(shared);
    const goMod = wrapperGoMod(HELM, helmGoMod, sharedVersions(shared, KUBE_GO_MOD));
    assert.match(goMod, /^require helm\.sh\/helm\/v3 v3\.19\.5$/m);
    assert.match(goMod, /^\tgolang\.org\/x\/net => golang\.org\/x\/net v0\.38\.0$/m);
    assert.match(goMod, /^\tk8s\.io\/api => k8s\.io\/api v0\.34\.10$/m);
    assert.match(goMod, /^\tgo\.etcd\.io\/etcd\/client\/v3 => go\.etcd\.io\/etcd\/client\/v3 v3\.6\.4$/m);
    assert.doesNotMatch(goMod, /pflag/);
  });

  it('refuses in-tree requirements of a module that publishes none', () => {
    assert.throws(
      () => wrapperGoMod({ ...KUBE, stagingVersion: undefined }, KUBE_GO_MOD),
      /k8s\.io\/kubernetes@v1\.34\.10 requires k8s\.io\/api at v0\.0\.0/,
    );
  });
});

describe('executableName', () => {
  it("is the name go build -o DIR/ gives a main package's executable", () => {
    assert.equal(executableName('k8s.io/kubernetes/cmd/kube-apiserver'), 'kube-apiserver');
    assert.equal(executableName('go.etcd.io/etcd/server/v3'), 'server');
    assert.equal(executableName('helm.sh/helm/v3/cmd/helm'), 'helm');
    assert.equal(executableName('example.com/v2tool'), 'v2tool');
  });
});
