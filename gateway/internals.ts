/**
 * NOT PUBLIC: the gateway's parts that bench/ measures or drives beneath the public entry (index.ts),
 * named in one place so that what the benchmarks depend on stays visible and small. It is not among
 * package.json's exports nor in the built library, and test/layers.test.ts keeps the package's own
 * code from importing it.
 */

export { issueServingCertificate, newAuthority } from '../webhooks/certificates.ts';
// bench/roundtrip.ts: one call to a function service, through the gateway's own transport and client.
export { FunctionService } from './dispatch/function-service.ts';
export { invocationRequest } from './dispatch/invocation.ts';
// Signing as `--signing-keys` signs (bench/common.ts makes the key a gateway makes on a first start),
// and a function service's certificates as `--function-tls` makes them (from webhooks/).
export { newKey, publicKeys, signingKeyOf } from './dispatch/keys.ts';
export { hmacSigner, keySigner, type Signer } from './dispatch/signer.ts';
export { httpTransport, type Transport } from './dispatch/transport.ts';
// The cluster, as the gateway talks to it: bench/common.ts watches KopfExamples with the gateway's
// own watcher, so that a result is seen when the gateway would see it.
export type { KubeClient, RequestInit } from './kube/client.ts';
export { ignoreNotFound } from './kube/errors.ts';
export { ApiConnections } from './kube/liveness.ts';
export { type WatchEvent, Watcher } from './kube/watcher.ts';
// bench/metrics-cost.ts: the metrics' own cost; bench/write-transport.ts: the API's connections.
export { GatewayMetrics } from './metrics/metrics.ts';
// bench/sharding.ts: replicas started frozen and resumed together, and who owned what.
export { freeze, resume } from './peering/freeze.ts';
export { listMembers } from './peering/leases.ts';
export { Ring } from './peering/ring.ts';
export { PRIVATE_KEYS_FILE, PUBLIC_KEYS_FILE } from './services/signing-keys.ts';
