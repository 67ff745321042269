/**
 * How the apiserver reaches the webhook server, chosen with one setting: `local`, a URL on this host
 * (an apiserver on the same machine); `service`, a Service in the cluster; `ngrok`, a tunnel opened
 * with the official `@ngrok/ngrok` SDK, for a laptop the cluster cannot reach; `auto`, the first that
 * fits. Each way opens once the server listens and says what the webhook configurations name.
 */
import { networkInterfaces } from 'node:os';
import type { ClientConfig } from './configurations.ts';

export type ReachMode = 'auto' | 'local' | 'service' | 'ngrok';

export interface Way {
  /** What the webhook configurations name. */
  clientConfig: ClientConfig;
  /**
   * Whether the configurations carry the server's CA: not for a tunnel, whose public endpoint
   * serves a certificate the apiserver already trusts (and which reaches this server itself).
   */
  bundle: boolean;
  close(): Promise<void>;
}

/** The server's address as it listens. */
export interface Listening {
  host: string;
  port: number;
  /** `https` (the webhook server) unless given: a dev session's function service is plain HTTP on this host. */
  scheme?: 'http' | 'https';
}

export type Reach = (server: Listening) => Promise<Way>;

/** `url`: what the apiserver calls instead of the server's own address (a load balancer in front of replicas). */
export function localReach(url?: string): Reach {
  return async ({ host, port, scheme = 'https' }) => ({
    clientConfig: { url: url ?? `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}` },
    bundle: true,
    close: async () => {},
  });
}

/**
 * The names the serving certificate holds for `local`: this host's, and the host of `url` when the
 * apiserver calls the server there, as it checks the certificate against the host it calls.
 */
export function localHosts(listenHost: string, url?: string): string[] {
  const listening = listenHost === '0.0.0.0' ? '127.0.0.1' : listenHost;
  const called = url ? new URL(url).hostname.replace(/^\[|\]$/g, '') : listening;
  return [...new Set([listening, 'localhost', called])];
}

export function serviceReach(service: { namespace: string; name: string; port: number }): Reach {
  return async () => ({ clientConfig: { service }, bundle: true, close: async () => {} });
}

/** What the tunnel needs of `@ngrok/ngrok`: its `forward`, or a stand-in in tests. */
export type Forward = (config: {
  addr: string;
  authtoken?: string;
  authtoken_from_env?: boolean;
  domain?: string;
  verify_upstream_tls: boolean;
}) => Promise<{ url(): string | null; close(): Promise<void> }>;

export interface NgrokOptions {
  /** The account's authtoken; from NGROK_AUTHTOKEN when absent. */
  authtoken?: string;
  /** A reserved domain, for a URL that stays the same across starts. */
  domain?: string;
  forward?: Forward;
}

/** A tunnel opening failed: what to do about it is in the message. */
export class TunnelError extends Error {
  override name = 'TunnelError';
}

export function ngrokReach(options: NgrokOptions = {}): Reach {
  return async ({ port, scheme = 'https' }) => {
    const forward = options.forward ?? (await import('@ngrok/ngrok')).forward;
    let listener: Awaited<ReturnType<Forward>>;
    try {
      listener = await forward({
        addr: `${scheme}://127.0.0.1:${port}`,
        // Over TLS, the agent meets the server's own CA, which it does not know.
        verify_upstream_tls: false,
        ...(options.authtoken ? { authtoken: options.authtoken } : { authtoken_from_env: true }),
        ...(options.domain ? { domain: options.domain } : {}),
      });
    } catch (error) {
      throw new TunnelError(
        `the ngrok tunnel could not open: ${(error as Error).message}. It needs an ngrok account's ` +
          'authtoken (NGROK_AUTHTOKEN, or --ngrok-authtoken-secret) and a connection to ngrok; ' +
          'where the apiserver can reach this host, use --webhook-reach local or service',
      );
    }
    const url = listener.url();
    if (!url) {
      await listener.close();
      throw new TunnelError('the ngrok tunnel opened without a URL');
    }
    return { clientConfig: { url }, bundle: false, close: () => listener.close() };
  };
}

/** What `auto` decides from: whether this process runs in a pod, and where the apiserver is. */
export interface Surroundings {
  inPod: boolean;
  /** The host of the apiserver's URL. */
  apiserverHost: string;
  /** This host's addresses (networkInterfaces by default). */
  localAddresses?: readonly string[];
}

/** `auto`: `service` inside a pod, `local` when the apiserver is on this host, `ngrok` otherwise. */
export function chooseMode(mode: ReachMode, surroundings: Surroundings): Exclude<ReachMode, 'auto'> {
  if (mode !== 'auto') return mode;
  if (surroundings.inPod) return 'service';
  const host = surroundings.apiserverHost.replace(/^\[|\]$/g, '');
  const local = surroundings.localAddresses ?? ownAddresses();
  return host === 'localhost' || host.startsWith('127.') || host === '::1' || local.includes(host)
    ? 'local'
    : 'ngrok';
}

function ownAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((addresses) =>
    (addresses ?? []).map(({ address }) => address),
  );
}
