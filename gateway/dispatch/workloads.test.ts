import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ObjectToApply } from '../../protocol/index.ts';
import { type PodAllowance, podViolations } from './workloads.ts';

const ALLOW: PodAllowance = { serviceAccount: 'default', secrets: ['registry'] };

/** A Pod of one container, with `spec` merged over its own. */
function pod(spec: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}): ObjectToApply {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', ...metadata },
    spec: { containers: [{ name: 'app', image: 'busybox' }], ...spec },
  };
}

/** A Pod whose one container has `container` merged over it. */
const withContainer = (container: Record<string, unknown>) =>
  pod({ containers: [{ name: 'app', image: 'busybox', ...container }] });

const violations = (child: ObjectToApply, allow = ALLOW) => podViolations(child, allow);

describe('podViolations', () => {
  it('passes a minimal pod, and looks into no kind that runs none', () => {
    assert.deepEqual(violations(pod()), []);
    const configMap = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c' },
      spec: { hostNetwork: true },
    };
    assert.deepEqual(violations(configMap), []);
    // A kind of the same name in another group is not the built-in one.
    const custom = {
      apiVersion: 'example.com/v1',
      kind: 'Deployment',
      metadata: { name: 'd' },
      spec: { hostPID: true },
    };
    assert.deepEqual(violations(custom), []);
  });

  it('looks into the pod template of every built-in workload, naming the path', () => {
    const template = { spec: { hostNetwork: true, containers: [] } };
    const kinds: [string, string, Record<string, unknown>, string][] = [
      ['apps/v1', 'Deployment', { template }, 'spec.template.spec.hostNetwork'],
      ['apps/v1', 'StatefulSet', { template }, 'spec.template.spec.hostNetwork'],
      ['apps/v1', 'DaemonSet', { template }, 'spec.template.spec.hostNetwork'],
      ['apps/v1', 'ReplicaSet', { template }, 'spec.template.spec.hostNetwork'],
      ['v1', 'ReplicationController', { template }, 'spec.template.spec.hostNetwork'],
      ['batch/v1', 'Job', { template }, 'spec.template.spec.hostNetwork'],
      [
        'batch/v1',
        'CronJob',
        { jobTemplate: { spec: { template } } },
        'spec.jobTemplate.spec.template.spec.hostNetwork',
      ],
    ];
    for (const [apiVersion, kind, spec, path] of kinds) {
      assert.deepEqual(
        violations({ apiVersion, kind, metadata: { name: 'w' }, spec }),
        [`${path} is true; Pod Security baseline forbids sharing the host namespaces`],
        kind,
      );
    }
  });

  describe('the ServiceAccount', () => {
    it('is the one the scope names, in serviceAccountName and the deprecated serviceAccount', () => {
      assert.deepEqual(violations(pod({ serviceAccountName: 'default' })), []);
      assert.deepEqual(violations(pod({ serviceAccountName: 'causeway-gateway' })), [
        'spec.serviceAccountName is causeway-gateway; its scope allows default',
      ]);
      assert.deepEqual(violations(pod({ serviceAccount: 'causeway-gateway' })), [
        'spec.serviceAccount is causeway-gateway; its scope allows default',
      ]);
      const builder = { ...ALLOW, serviceAccount: 'builder' };
      assert.deepEqual(
        violations(pod({ serviceAccountName: 'builder', serviceAccount: 'builder' }), builder),
        [],
      );
    });

    it('is named when the scope names another than default: none set runs the pod as default', () => {
      assert.deepEqual(violations(pod(), { ...ALLOW, serviceAccount: 'builder' }), [
        'spec.serviceAccountName is unset, so default; its scope allows builder',
      ]);
    });
  });

  describe('Secrets', () => {
    const refused = (path: string, name = 'signing-keys') =>
      `${path} is ${name}; its scope allows the Secrets registry`;

    it('are mounted only where the scope names them: secret volumes and projected sources', () => {
      assert.deepEqual(violations(pod({ volumes: [{ name: 'v', secret: { secretName: 'registry' } }] })), []);
      assert.deepEqual(
        violations(pod({ volumes: [{ name: 'v', secret: { secretName: 'signing-keys' } }] })),
        [refused('spec.volumes[0].secret.secretName')],
      );
      const projected = {
        name: 'v',
        projected: { sources: [{ configMap: { name: 'c' } }, { secret: { name: 'signing-keys' } }] },
      };
      assert.deepEqual(violations(pod({ volumes: [projected] })), [
        refused('spec.volumes[0].projected.sources[1].secret.name'),
      ]);
    });

    it('are named by other volume sources only where the scope names them', () => {
      const volumes = [
        { name: 'a', csi: { driver: 'd', nodePublishSecretRef: { name: 'signing-keys' } } },
        { name: 'b', azureFile: { shareName: 's', secretName: 'signing-keys' } },
        { name: 'c', rbd: { monitors: [], image: 'i', secretRef: { name: 'signing-keys' } } },
      ];
      assert.deepEqual(violations(pod({ volumes })), [
        refused('spec.volumes[0].csi.nodePublishSecretRef.name'),
        refused('spec.volumes[1].azureFile.secretName'),
        refused('spec.volumes[2].rbd.secretRef.name'),
      ]);
    });

    it('are read into the environment only where the scope names them', () => {
      const container = {
        env: [
          { name: 'A', value: 'a' },
          { name: 'B', valueFrom: { secretKeyRef: { name: 'signing-keys', key: 'k' } } },
          { name: 'C', valueFrom: { secretKeyRef: { name: 'registry', key: 'k' } } },
        ],
        envFrom: [{ configMapRef: { name: 'c' } }, { secretRef: { name: 'signing-keys' } }],
      };
      assert.deepEqual(violations(withContainer(container)), [
        refused('spec.containers[0].env[1].valueFrom.secretKeyRef.name'),
        refused('spec.containers[0].envFrom[1].secretRef.name'),
      ]);
    });

    it('pull images only where the scope names them', () => {
      assert.deepEqual(
        violations(pod({ imagePullSecrets: [{ name: 'registry' }, { name: 'signing-keys' }] })),
        [refused('spec.imagePullSecrets[1].name')],
      );
    });

    it('are none when the scope names none', () => {
      assert.deepEqual(
        violations(pod({ imagePullSecrets: [{ name: 'registry' }] }), { ...ALLOW, secrets: [] }),
        ['spec.imagePullSecrets[0].name is registry; its scope allows no Secrets'],
      );
    });
  });

  describe('Pod Security baseline', () => {
    const forbids = (path: string, value: string, what: string) =>
      `${path} is ${value}; Pod Security baseline forbids ${what}`;

    it('host namespaces', () => {
      assert.deepEqual(violations(pod({ hostNetwork: false, hostPID: null })), []);
      assert.deepEqual(violations(pod({ hostNetwork: true, hostPID: true, hostIPC: true })), [
        forbids('spec.hostNetwork', 'true', 'sharing the host namespaces'),
        forbids('spec.hostPID', 'true', 'sharing the host namespaces'),
        forbids('spec.hostIPC', 'true', 'sharing the host namespaces'),
      ]);
    });

    it('privileged containers, init and ephemeral ones too', () => {
      const privileged = { name: 'x', image: 'i', securityContext: { privileged: true } };
      const spec = {
        initContainers: [privileged],
        containers: [{ name: 'a', image: 'i' }],
        ephemeralContainers: [privileged],
      };
      assert.deepEqual(violations(pod(spec)), [
        forbids('spec.initContainers[0].securityContext.privileged', 'true', 'privileged containers'),
        forbids('spec.ephemeralContainers[0].securityContext.privileged', 'true', 'privileged containers'),
      ]);
      assert.deepEqual(violations(withContainer({ securityContext: { privileged: false } })), []);
    });

    it('capabilities beyond the default set', () => {
      const add = ['NET_BIND_SERVICE', 'CHOWN', 'SYS_ADMIN'];
      assert.deepEqual(
        violations(withContainer({ securityContext: { capabilities: { add, drop: ['ALL'] } } })),
        [
          forbids(
            'spec.containers[0].securityContext.capabilities.add[2]',
            'SYS_ADMIN',
            'capabilities beyond the default set',
          ),
        ],
      );
    });

    it('hostPath volumes', () => {
      assert.deepEqual(
        violations(
          pod({
            volumes: [
              { name: 'v', emptyDir: {} },
              { name: 'h', hostPath: { path: '/' } },
            ],
          }),
        ),
        [forbids('spec.volumes[1].hostPath', '{"path":"/"}', 'hostPath volumes')],
      );
    });

    it('host ports', () => {
      assert.deepEqual(
        violations(withContainer({ ports: [{ containerPort: 80 }, { containerPort: 81, hostPort: 0 }] })),
        [],
      );
      assert.deepEqual(violations(withContainer({ ports: [{ containerPort: 80, hostPort: 80 }] })), [
        forbids('spec.containers[0].ports[0].hostPort', '80', 'host ports'),
      ]);
    });

    it('AppArmor profiles other than the runtime default or a local one, by field or annotation', () => {
      const profile = (type: string) => ({ appArmorProfile: { type } });
      assert.deepEqual(violations(pod({ securityContext: profile('RuntimeDefault') })), []);
      assert.deepEqual(violations(withContainer({ securityContext: profile('Localhost') })), []);
      assert.deepEqual(violations(pod({ securityContext: profile('Unconfined') })), [
        forbids(
          'spec.securityContext.appArmorProfile.type',
          'Unconfined',
          'AppArmor profiles other than RuntimeDefault or Localhost',
        ),
      ]);
      const annotations = {
        'container.apparmor.security.beta.kubernetes.io/app': 'unconfined',
        'container.apparmor.security.beta.kubernetes.io/other': 'localhost/mine',
      };
      assert.deepEqual(violations(pod({}, { annotations })), [
        forbids(
          'metadata.annotations["container.apparmor.security.beta.kubernetes.io/app"]',
          'unconfined',
          'AppArmor profiles other than runtime/default or localhost/*',
        ),
      ]);
    });

    it('SELinux types other than the container ones, and any user or role', () => {
      assert.deepEqual(
        violations(pod({ securityContext: { seLinuxOptions: { type: 'container_t', level: 's0:c1' } } })),
        [],
      );
      assert.deepEqual(
        violations(
          withContainer({ securityContext: { seLinuxOptions: { type: 'spc_t', user: 'root', role: '' } } }),
        ),
        [
          forbids(
            'spec.containers[0].securityContext.seLinuxOptions.type',
            'spc_t',
            'SELinux types other than the container ones',
          ),
          forbids('spec.containers[0].securityContext.seLinuxOptions.user', 'root', 'a custom SELinux user'),
        ],
      );
    });

    it('/proc mounts other than Default', () => {
      assert.deepEqual(violations(withContainer({ securityContext: { procMount: 'Default' } })), []);
      assert.deepEqual(violations(withContainer({ securityContext: { procMount: 'Unmasked' } })), [
        forbids(
          'spec.containers[0].securityContext.procMount',
          'Unmasked',
          '/proc mounts other than Default',
        ),
      ]);
    });

    it('seccomp Unconfined, by field or annotation', () => {
      assert.deepEqual(
        violations(pod({ securityContext: { seccompProfile: { type: 'RuntimeDefault' } } })),
        [],
      );
      assert.deepEqual(
        violations(withContainer({ securityContext: { seccompProfile: { type: 'Unconfined' } } })),
        [
          forbids(
            'spec.containers[0].securityContext.seccompProfile.type',
            'Unconfined',
            'seccomp profiles other than RuntimeDefault or Localhost',
          ),
        ],
      );
      assert.deepEqual(
        violations(pod({}, { annotations: { 'seccomp.security.alpha.kubernetes.io/pod': 'unconfined' } })),
        [
          forbids(
            'metadata.annotations["seccomp.security.alpha.kubernetes.io/pod"]',
            'unconfined',
            'seccomp profiles other than RuntimeDefault or Localhost',
          ),
        ],
      );
    });

    it('unsafe sysctls', () => {
      const sysctls = [
        { name: 'net.ipv4.ip_local_port_range', value: '1024 65535' },
        { name: 'kernel.msgmax', value: '1' },
      ];
      assert.deepEqual(violations(pod({ securityContext: { sysctls } })), [
        forbids('spec.securityContext.sysctls[1].name', 'kernel.msgmax', 'unsafe sysctls'),
      ]);
    });

    it('Windows HostProcess containers', () => {
      const hostProcess = { windowsOptions: { hostProcess: true } };
      assert.deepEqual(violations(pod({ securityContext: hostProcess })), [
        forbids('spec.securityContext.windowsOptions.hostProcess', 'true', 'Windows HostProcess'),
      ]);
      assert.deepEqual(violations(withContainer({ securityContext: hostProcess })), [
        forbids(
          'spec.containers[0].securityContext.windowsOptions.hostProcess',
          'true',
          'Windows HostProcess',
        ),
      ]);
    });

    it('probes and lifecycle hooks that name a host', () => {
      const container = {
        livenessProbe: { httpGet: { port: 80, host: '' } },
        readinessProbe: { tcpSocket: { port: 80, host: '10.0.0.1' } },
        lifecycle: { preStop: { httpGet: { port: 80, host: '169.254.169.254' } } },
      };
      assert.deepEqual(violations(withContainer(container)), [
        forbids('spec.containers[0].readinessProbe.tcpSocket.host', '10.0.0.1', 'probes and hooks on a host'),
        forbids(
          'spec.containers[0].lifecycle.preStop.httpGet.host',
          '169.254.169.254',
          'probes and hooks on a host',
        ),
      ]);
    });
  });

  it('refuses a list that is not one rather than skipping it, and cuts a long value short', () => {
    assert.deepEqual(violations(pod({ volumes: { name: 'v', hostPath: { path: '/' } } })), [
      'spec.volumes is {"name":"v","hostPath":{"path":"/"}}; a list was expected',
    ]);
    const [long] = violations(pod({ serviceAccountName: 'a'.repeat(300) }));
    assert.equal(long, `spec.serviceAccountName is ${'a'.repeat(80)}…; its scope allows default`);
  });
});
