/**
 * What the pods of a child may run as: the ServiceAccount and the Secrets its service's scope names,
 * and no more than Pod Security Standards' `baseline` allows (the whole list of the Kubernetes spec,
 * v1.34). A Pod is looked into, and the pod template of the built-in kinds that run pods; a child of
 * any other kind runs none of its own. Pure: the child as answered, no cluster.
 */
import type { ObjectToApply } from '../../protocol/index.ts';
import { isObject } from '../../protocol/json.ts';

/** What a scope lets the pods of its children use. */
export interface PodAllowance {
  serviceAccount: string;
  secrets: readonly string[];
}

/** Where the built-in kinds that run pods keep the pod (its metadata and spec), by `group/kind`. */
const POD_PATHS: Readonly<Record<string, readonly string[]>> = {
  '/Pod': [],
  '/ReplicationController': ['spec', 'template'],
  'apps/Deployment': ['spec', 'template'],
  'apps/StatefulSet': ['spec', 'template'],
  'apps/DaemonSet': ['spec', 'template'],
  'apps/ReplicaSet': ['spec', 'template'],
  'batch/Job': ['spec', 'template'],
  'batch/CronJob': ['spec', 'jobTemplate', 'spec', 'template'],
};

/** Capabilities a container may add under baseline: the container runtimes' default set. */
const BASELINE_CAPABILITIES: ReadonlySet<string> = new Set([
  'AUDIT_WRITE',
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'MKNOD',
  'NET_BIND_SERVICE',
  'SETFCAP',
  'SETGID',
  'SETPCAP',
  'SETUID',
  'SYS_CHROOT',
]);

/** Sysctls baseline allows: namespaced, and isolated from other pods. */
const SAFE_SYSCTLS: ReadonlySet<string> = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
  'net.ipv4.tcp_rmem',
  'net.ipv4.tcp_wmem',
]);

const SELINUX_TYPES: ReadonlySet<string> = new Set([
  'container_t',
  'container_init_t',
  'container_kvm_t',
  'container_engine_t',
]);
const APPARMOR_TYPES: ReadonlySet<string> = new Set(['RuntimeDefault', 'Localhost']);

/** Volume sources that name a Secret for the kubelet to read, by the path of the name in each. */
const SECRET_VOLUMES: readonly (readonly [string, ...string[]])[] = [
  ['secret', 'secretName'],
  ['azureFile', 'secretName'],
  ['csi', 'nodePublishSecretRef', 'name'],
  ['cephfs', 'secretRef', 'name'],
  ['cinder', 'secretRef', 'name'],
  ['flexVolume', 'secretRef', 'name'],
  ['iscsi', 'secretRef', 'name'],
  ['rbd', 'secretRef', 'name'],
  ['scaleIO', 'secretRef', 'name'],
  ['storageos', 'secretRef', 'name'],
];

const CONTAINER_LISTS = ['initContainers', 'containers', 'ephemeralContainers'] as const;
const HANDLERS = [
  ['livenessProbe'],
  ['readinessProbe'],
  ['startupProbe'],
  ['lifecycle', 'postStart'],
  ['lifecycle', 'preStop'],
] as const;

const BASELINE = 'Pod Security baseline forbids';

/**
 * Why the pods of `child` may not run, one line each (`<path> is <value>; <rule>`); empty when they
 * may, or when it runs none.
 */
export function podViolations(child: ObjectToApply, allow: PodAllowance): string[] {
  const group = child.apiVersion.includes('/') ? child.apiVersion.split('/')[0] : '';
  const at = POD_PATHS[`${group}/${child.kind}`];
  if (!at) return [];
  const pod = at.reduce<unknown>((value, key) => field(value, key), child);
  const found: string[] = [];
  const check = new PodCheck(at.join('.'), allow, found);
  check.pod(pod);
  return found;
}

class PodCheck {
  readonly #base: string;
  readonly #allow: PodAllowance;
  readonly #found: string[];

  constructor(base: string, allow: PodAllowance, found: string[]) {
    this.#base = base;
    this.#allow = allow;
    this.#found = found;
  }

  pod(pod: unknown): void {
    const spec = field(pod, 'spec');
    this.#serviceAccount(spec);
    for (const key of ['hostNetwork', 'hostPID', 'hostIPC']) {
      this.#falseOrUnset(`spec.${key}`, field(spec, key), 'sharing the host namespaces');
    }
    const context = field(spec, 'securityContext');
    this.#securityContext('spec.securityContext', context);
    for (const [index, sysctl] of this.#items('spec.securityContext.sysctls', field(context, 'sysctls'))) {
      const name = field(sysctl, 'name');
      if (typeof name !== 'string' || !SAFE_SYSCTLS.has(name)) {
        this.#refuse(`spec.securityContext.sysctls[${index}].name`, name, `${BASELINE} unsafe sysctls`);
      }
    }
    for (const [index, volume] of this.#items('spec.volumes', field(spec, 'volumes'))) {
      this.#volume(`spec.volumes[${index}]`, volume);
    }
    for (const [index, secret] of this.#items('spec.imagePullSecrets', field(spec, 'imagePullSecrets'))) {
      this.#secret(`spec.imagePullSecrets[${index}].name`, field(secret, 'name'));
    }
    for (const list of CONTAINER_LISTS) {
      for (const [index, container] of this.#items(`spec.${list}`, field(spec, list))) {
        this.#container(`spec.${list}[${index}]`, container);
      }
    }
    this.#annotations(field(field(pod, 'metadata'), 'annotations'));
  }

  /** Both fields, the deprecated `serviceAccount` too; neither set runs the pod as `default`. */
  #serviceAccount(spec: unknown): void {
    const allowed = this.#allow.serviceAccount;
    const rule = `its scope allows ${allowed}`;
    let named = false;
    for (const key of ['serviceAccountName', 'serviceAccount']) {
      const name = field(spec, key);
      if (name === undefined || name === null) continue;
      named = true;
      if (name !== allowed) this.#refuse(`spec.${key}`, name, rule);
    }
    if (!named && allowed !== 'default') {
      this.#found.push(`${this.#path('spec.serviceAccountName')} is unset, so default; ${rule}`);
    }
  }

  #volume(path: string, volume: unknown): void {
    if (isSet(field(volume, 'hostPath'))) {
      this.#refuse(`${path}.hostPath`, field(volume, 'hostPath'), `${BASELINE} hostPath volumes`);
    }
    for (const [source, ...name] of SECRET_VOLUMES) {
      const value = field(volume, source);
      if (isSet(value)) this.#secret(`${path}.${source}.${name.join('.')}`, dig(value, name));
    }
    const sources = field(field(volume, 'projected'), 'sources');
    for (const [index, source] of this.#items(`${path}.projected.sources`, sources)) {
      const secret = field(source, 'secret');
      if (isSet(secret))
        this.#secret(`${path}.projected.sources[${index}].secret.name`, field(secret, 'name'));
    }
  }

  #container(path: string, container: unknown): void {
    const context = field(container, 'securityContext');
    this.#falseOrUnset(
      `${path}.securityContext.privileged`,
      field(context, 'privileged'),
      'privileged containers',
    );
    const added = field(field(context, 'capabilities'), 'add');
    for (const [index, capability] of this.#items(`${path}.securityContext.capabilities.add`, added)) {
      if (typeof capability !== 'string' || !BASELINE_CAPABILITIES.has(capability)) {
        this.#refuse(
          `${path}.securityContext.capabilities.add[${index}]`,
          capability,
          `${BASELINE} capabilities beyond the default set`,
        );
      }
    }
    const procMount = field(context, 'procMount');
    if (isSet(procMount) && procMount !== 'Default') {
      this.#refuse(
        `${path}.securityContext.procMount`,
        procMount,
        `${BASELINE} /proc mounts other than Default`,
      );
    }
    this.#securityContext(`${path}.securityContext`, context);
    for (const [index, port] of this.#items(`${path}.ports`, field(container, 'ports'))) {
      const hostPort = field(port, 'hostPort');
      if (isSet(hostPort) && hostPort !== 0)
        this.#refuse(`${path}.ports[${index}].hostPort`, hostPort, `${BASELINE} host ports`);
    }
    for (const [index, env] of this.#items(`${path}.env`, field(container, 'env'))) {
      const ref = field(field(env, 'valueFrom'), 'secretKeyRef');
      if (isSet(ref)) this.#secret(`${path}.env[${index}].valueFrom.secretKeyRef.name`, field(ref, 'name'));
    }
    for (const [index, source] of this.#items(`${path}.envFrom`, field(container, 'envFrom'))) {
      const ref = field(source, 'secretRef');
      if (isSet(ref)) this.#secret(`${path}.envFrom[${index}].secretRef.name`, field(ref, 'name'));
    }
    for (const keys of HANDLERS) {
      const handler = dig(container, keys);
      for (const action of ['httpGet', 'tcpSocket']) {
        const host = field(field(handler, action), 'host');
        if (isSet(host) && host !== '') {
          this.#refuse(
            `${path}.${keys.join('.')}.${action}.host`,
            host,
            `${BASELINE} probes and hooks on a host`,
          );
        }
      }
    }
  }

  /** What the pod's and each container's security context share. */
  #securityContext(path: string, context: unknown): void {
    const windows = field(context, 'windowsOptions');
    this.#falseOrUnset(
      `${path}.windowsOptions.hostProcess`,
      field(windows, 'hostProcess'),
      'Windows HostProcess',
    );
    const appArmor = field(field(context, 'appArmorProfile'), 'type');
    if (isSet(appArmor) && !(typeof appArmor === 'string' && APPARMOR_TYPES.has(appArmor))) {
      this.#refuse(
        `${path}.appArmorProfile.type`,
        appArmor,
        `${BASELINE} AppArmor profiles other than RuntimeDefault or Localhost`,
      );
    }
    const seLinux = field(context, 'seLinuxOptions');
    const type = field(seLinux, 'type');
    if (isSet(type) && type !== '' && !(typeof type === 'string' && SELINUX_TYPES.has(type))) {
      this.#refuse(
        `${path}.seLinuxOptions.type`,
        type,
        `${BASELINE} SELinux types other than the container ones`,
      );
    }
    for (const key of ['user', 'role']) {
      const value = field(seLinux, key);
      if (isSet(value) && value !== '')
        this.#refuse(`${path}.seLinuxOptions.${key}`, value, `${BASELINE} a custom SELinux ${key}`);
    }
    const seccomp = field(field(context, 'seccompProfile'), 'type');
    if (isSet(seccomp) && seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost') {
      this.#refuse(
        `${path}.seccompProfile.type`,
        seccomp,
        `${BASELINE} seccomp profiles other than RuntimeDefault or Localhost`,
      );
    }
  }

  /** The annotations older kubelets read AppArmor and seccomp profiles from. */
  #annotations(annotations: unknown): void {
    if (!isObject(annotations)) return;
    for (const [key, value] of Object.entries(annotations)) {
      const path = `metadata.annotations[${JSON.stringify(key)}]`;
      if (key.startsWith('container.apparmor.security.beta.kubernetes.io/')) {
        if (!(value === 'runtime/default' || (typeof value === 'string' && value.startsWith('localhost/')))) {
          this.#refuse(
            path,
            value,
            `${BASELINE} AppArmor profiles other than runtime/default or localhost/*`,
          );
        }
      } else if (
        key === 'seccomp.security.alpha.kubernetes.io/pod' ||
        key.startsWith('container.seccomp.security.alpha.kubernetes.io/')
      ) {
        if (value === 'unconfined')
          this.#refuse(path, value, `${BASELINE} seccomp profiles other than RuntimeDefault or Localhost`);
      }
    }
  }

  #secret(path: string, name: unknown): void {
    const { secrets } = this.#allow;
    if (typeof name === 'string' && secrets.includes(name)) return;
    const rule =
      secrets.length > 0
        ? `its scope allows the Secrets ${secrets.join(', ')}`
        : 'its scope allows no Secrets';
    this.#refuse(path, name, rule);
  }

  #falseOrUnset(path: string, value: unknown, what: string): void {
    if (isSet(value) && value !== false) this.#refuse(path, value, `${BASELINE} ${what}`);
  }

  /** A list's items with their indexes; a value that is not a list is refused rather than skipped. */
  #items(path: string, value: unknown): [number, unknown][] {
    if (!isSet(value)) return [];
    if (Array.isArray(value)) return [...value.entries()];
    this.#refuse(path, value, 'a list was expected');
    return [];
  }

  #refuse(path: string, value: unknown, rule: string): void {
    this.#found.push(`${this.#path(path)} is ${shown(value)}; ${rule}`);
  }

  #path(path: string): string {
    return this.#base ? `${this.#base}.${path}` : path;
  }
}

/** An own field of an object; undefined for anything else. */
function field(value: unknown, key: string): unknown {
  return isObject(value) && Object.hasOwn(value, key) ? value[key] : undefined;
}

function dig(value: unknown, keys: readonly string[]): unknown {
  return keys.reduce<unknown>((at, key) => field(at, key), value);
}

/** Kubernetes reads a null field as an unset one. */
function isSet(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/** A value in a refusal: a string as it is, anything else as JSON, cut short (the service chose it). */
function shown(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}
