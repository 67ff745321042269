/**
 * The gateway's tunables in one sectioned object, as Kopf's OperatorSettings: each has a default here,
 * the embedding API takes any part of them (`startGateway({ settings: { calls: { timeoutMs } } })`),
 * and the CLI sets those that matter in operation.
 */
import type { CertificateFiles } from '../webhooks/certificates.ts';
import type { Forward, ReachMode } from '../webhooks/reach.ts';

export interface Settings {
  processing: {
    /** Objects of one resource processed at once: each served resource has its own queue. */
    concurrency: number;
    /** How long to wait for the watch to show the gateway's own write before reading the object afresh. */
    consistencyTimeoutMs: number;
    /** Seconds before a cycle that failed unexpectedly (API trouble) runs again: one per failure, the last repeated. */
    errorDelaysS: readonly number[];
    /** After a guarded write met a newer object, look at it again this soon. */
    conflictRetryMs: number;
  };
  calls: {
    /** How long one call of a function service may take. */
    timeoutMs: number;
    /** Seconds before calling a service again after it could not be reached or answered badly: one per retry, the last repeated. */
    serviceRetryDelaysS: readonly number[];
    /**
     * How long one call of a daemon lasts: its `stopped` signal then ends the round and it is called
     * again at once (so no proxy's idle timeout, nor a host's limit on a call's length, cuts it).
     */
    daemonRoundMs: number;
    /** Objects in one call of a service's index functions, at most (resource/indexes.ts). */
    indexBatchSize: number;
    /** Bytes of those objects in one such call, at most: well below what a service takes (16 MiB by default). */
    indexBatchBytes: number;
    /**
     * Calls of one service made together (in one turn of the event loop) sent in one request, at most,
     * when the service takes batches (its manifest says `batches`); 1 sends each call alone.
     */
    callBatchSize: number;
    /** Bytes of those calls in one request, at most. */
    callBatchBytes: number;
    /** How often the services' manifests are read again, so that a service redeployed with other handlers is served as it is now. */
    manifestRefreshMs: number;
    /**
     * A service that answers it lacks handlers it was called for has its manifest read at once, then
     * again no sooner than this after the last such read: one that flips its manifest cannot make the
     * gateway rebind (and list again) many times a second.
     */
    manifestRereadSpacingMs: number;
    /**
     * Calls at once to one function service over HTTP (a batch is one), each on a connection of its
     * own: its budget of calls in flight; the others wait their turn, in order, within their deadline.
     */
    concurrencyPerService: number;
    /**
     * Bytes of one function service's replies the gateway holds at once, read and not yet parsed: its
     * budget of reply bytes (at least maxReplyBytes). A reply's bytes are taken as they arrive (all of
     * its declared length at once); while its replies hold the whole budget, the next ones are not
     * read, and wait. Other services' replies have budgets of their own.
     */
    replyBytesPerService: number;
    /** Daemons of one function service whose calls are open at once: the others wait their turn, a round each. */
    daemonsPerService: number;
    /**
     * Bytes (as JSON) of the values one function service's indexes hold, over all of them: a value
     * that would go beyond is not kept, and its object's update of the index fails with the reason.
     */
    indexBytesPerService: number;
    /** Bytes (as JSON) of the values one object puts in one index, at most: more fails that update. */
    indexBytesPerObject: number;
    /** Calls in a row that find a service unreachable before it is taken as down: its calls then wait for its health check to answer. */
    breakerThreshold: number;
    /**
     * The longest reply of a function service the gateway reads, in bytes: it stops reading a longer
     * one and the call fails, so that one service cannot run the gateway out of memory.
     */
    maxReplyBytes: number;
    /** PEM of the CA that signed the function services' certificates (https URLs); the system's roots otherwise. */
    ca?: string;
    /**
     * Whether function services may be called over plain HTTP beyond this host. Off by default: calls
     * are signed, but their bodies (whole objects) and answers would cross the network readable and
     * unsigned. In a cluster whose network is trusted (or a mesh with mTLS), turn it on.
     */
    plainHttp: boolean;
    /**
     * Whether FunctionService objects may name a loopback or link-local host (the gateway's own, the
     * cloud metadata service's). Off by default: whoever may edit a FunctionService would reach them
     * through the gateway. On for a gateway on a developer's machine, or tests.
     */
    allowLoopback: boolean;
    /**
     * Whether a function service over HTTP may be served without a pinned scope. Off by default: what
     * such a service answers is done with the gateway's rights, on any resource they reach.
     */
    unscoped: boolean;
    /**
     * The Secret that keeps the CA the gateway issues the certificates of function services in the
     * cluster with (services/function-certificates.ts): made at the first start, shared by replicas.
     * Needed by the services given a certificate Secret (`FunctionEndpoint.certificate`).
     */
    certificateAuthority?: { namespace: string; name: string };
    /** How often the issued certificates are looked at: each is issued anew a third of its 90 days before its end, or once gone. */
    certificateCheckMs: number;
  };
  watching: {
    /** Objects per page when listing. */
    pageSize: number;
    /** How long the server keeps one watch open before the gateway renews it. */
    watchSeconds: number;
    /** Backoff between attempts after a list or watch failed. */
    retryDelayMs: { first: number; max: number };
  };
  admission: {
    /**
     * Where the apiserver reaches the webhook server: `local`, a URL on this host (an apiserver on the
     * same machine); `service`, through the Service `service` names in the cluster; `ngrok`, a tunnel;
     * `auto`: `service` in a pod, `local` when the apiserver is on this host, `ngrok` otherwise.
     */
    reach: ReachMode;
    /**
     * The ngrok tunnel: its authtoken from a Secret (key `authtoken`) instead of NGROK_AUTHTOKEN, a
     * reserved domain, and what opens it (`@ngrok/ngrok`'s forward unless given).
     */
    ngrok?: { authtokenSecret?: { namespace: string; name: string }; domain?: string; forward?: Forward };
    /** Where the server listens: port 0 takes any free one (`local` only). */
    listen: { host: string; port: number };
    /**
     * `local` only: the URL the webhook configurations name when the apiserver reaches the server
     * through something in front of it (a load balancer over replicas); the listen address by default.
     */
    url?: string;
    service?: { namespace: string; name: string; port: number };
    /** The Secret that keeps the certificates, so restarts and replicas share them; in memory when absent. */
    certificates?: { namespace: string; name: string };
    /** The user's certificate files instead (cert-manager's way), read again when they change. */
    certificateFiles?: CertificateFiles;
    /** How often to look whether the certificate files changed. */
    filesCheckIntervalMs: number;
    /** PEM of the CA that signed the apiserver's client certificate: other clients are refused (Kopf's verify_cafile). */
    clientCa?: string;
  };
  signing: {
    /**
     * Where the gateway keeps its Ed25519 signing keys: a Secret (private keys) and a ConfigMap of
     * the same name (`jwks.json`, the public keys the function services verify with). Undefined: calls
     * are signed with shared secrets only.
     */
    keys?: { namespace: string; name: string };
    /** A new key is made once the newest is this old. */
    rotateAfterMs: number;
    /** A new key waits this long, published, before it signs: the time services take to see it (a mounted ConfigMap takes a minute or two). */
    propagationMs: number;
    /** How often the keys are read again: another replica may have rotated them. */
    refreshMs: number;
  };
  persistence: {
    /**
     * Where the handled-record is kept: `auto` (the status where it keeps it, one write per change;
     * else annotations) or always `annotations`, for resources whose status other tools replace.
     */
    stateIn: 'auto' | 'annotations';
    /**
     * Adopt the state a Kopf operator kept under this annotation prefix (Kopf's default is
     * `kopf.zalando.org`): an object without a record of ours is taken as handled when Kopf handled
     * it, and changes since are updates. Its annotations are then never part of the essence.
     */
    adoptKopf?: string;
  };
  activities: {
    /**
     * How long the cleanup handlers may take as the gateway stops, retries included: it stops without
     * them then, so that a pod's grace period (30 s by default) is not spent waiting.
     */
    cleanupTimeoutMs: number;
    /** How long the liveness endpoint answers with the probes' last results before calling them again (Kopf: 10 s). */
    probeCacheMs: number;
  };
  peering: {
    /** How long a member's Lease lasts unrenewed before the others take it for gone (controller-runtime: 15 s). */
    leaseDurationS: number;
    /** A leader that could not renew for this long stops leading, well before the others may take over (10 s). */
    renewDeadlineS: number;
    /** How often a member renews its Lease and looks at the others' (2 s). */
    retryPeriodS: number;
  };
}

/** Any part of the settings: what is not given keeps its default. */
export type SettingsPatch = { [Section in keyof Settings]?: Partial<Settings[Section]> };

export const DEFAULT_SETTINGS: Settings = {
  processing: {
    concurrency: 64,
    consistencyTimeoutMs: 5000,
    // Fibonacci, capped near ten minutes.
    errorDelaysS: [1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610],
    conflictRetryMs: 100,
  },
  calls: {
    timeoutMs: 30_000,
    serviceRetryDelaysS: [1, 2, 5, 10, 30, 60],
    daemonRoundMs: 60_000,
    indexBatchSize: 100,
    indexBatchBytes: 4 * 1024 * 1024,
    callBatchSize: 64,
    callBatchBytes: 4 * 1024 * 1024,
    manifestRefreshMs: 30_000,
    manifestRereadSpacingMs: 5_000,
    concurrencyPerService: 128,
    replyBytesPerService: 64 * 1024 * 1024,
    daemonsPerService: 1024,
    indexBytesPerService: 64 * 1024 * 1024,
    indexBytesPerObject: 1024 * 1024,
    breakerThreshold: 5,
    maxReplyBytes: 16 * 1024 * 1024,
    plainHttp: false,
    allowLoopback: false,
    unscoped: false,
    certificateCheckMs: 3600_000,
  },
  watching: { pageSize: 500, watchSeconds: 300, retryDelayMs: { first: 250, max: 30_000 } },
  admission: { reach: 'auto', listen: { host: '127.0.0.1', port: 0 }, filesCheckIntervalMs: 60_000 },
  signing: { rotateAfterMs: 30 * 24 * 3600_000, propagationMs: 180_000, refreshMs: 60_000 },
  persistence: { stateIn: 'auto' },
  activities: { cleanupTimeoutMs: 10_000, probeCacheMs: 10_000 },
  peering: { leaseDurationS: 15, renewDeadlineS: 10, retryPeriodS: 2 },
};

export function settingsWith(patch: SettingsPatch = {}): Settings {
  return {
    processing: { ...DEFAULT_SETTINGS.processing, ...patch.processing },
    calls: { ...DEFAULT_SETTINGS.calls, ...patch.calls },
    watching: { ...DEFAULT_SETTINGS.watching, ...patch.watching },
    admission: { ...DEFAULT_SETTINGS.admission, ...patch.admission },
    signing: { ...DEFAULT_SETTINGS.signing, ...patch.signing },
    persistence: { ...DEFAULT_SETTINGS.persistence, ...patch.persistence },
    activities: { ...DEFAULT_SETTINGS.activities, ...patch.activities },
    peering: { ...DEFAULT_SETTINGS.peering, ...patch.peering },
  };
}
