/**
 * What a URL given in the cluster may be: a FunctionService's `url` (written by whoever may edit
 * FunctionServices) and a dev session's (by whoever may write its Lease or field). The gateway calls
 * them with whole objects and reports what they answer, so a URL is refused where it would reach
 * what its writer could not: the gateway's own host (loopback), the node's cloud metadata service
 * (link-local), or a path chosen through `?`, `#` or credentials smuggled into the URL.
 */
import { lookup as lookupCallback } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * Loopback, link-local (the cloud metadata address among them), "this host" addresses, and the
 * metadata services clouds serve elsewhere: AWS's over IPv6, Alibaba Cloud's.
 */
const LOCAL_ADDRESSES = new BlockList();
LOCAL_ADDRESSES.addSubnet('127.0.0.0', 8, 'ipv4');
LOCAL_ADDRESSES.addSubnet('169.254.0.0', 16, 'ipv4');
LOCAL_ADDRESSES.addSubnet('0.0.0.0', 8, 'ipv4');
LOCAL_ADDRESSES.addAddress('::1', 'ipv6');
LOCAL_ADDRESSES.addAddress('::', 'ipv6');
LOCAL_ADDRESSES.addSubnet('fe80::', 10, 'ipv6');
LOCAL_ADDRESSES.addAddress('fd00:ec2::254', 'ipv6');
LOCAL_ADDRESSES.addAddress('100.100.100.200', 'ipv4');

/**
 * Why `url` is no base URL a service may be called at, or undefined: http(s), printable ASCII
 * without a backslash, no user or password, no query, no fragment (each would change the path the
 * gateway calls, or where it connects).
 */
export function urlProblem(url: string): string | undefined {
  if (!/^https?:\/\//.test(url)) return 'it is not an http(s) URL';
  if (!/^[\x21-\x7e]+$/.test(url) || url.includes('\\')) {
    return 'it holds a space, a backslash or a character outside printable ASCII';
  }
  const authority = /^https?:\/\/([^/]*)/.exec(url)?.[1] ?? '';
  if (authority.includes('@')) return 'it holds a user name or password (userinfo)';
  if (url.includes('?')) return 'it holds a query (?)';
  if (url.includes('#')) return 'it holds a fragment (#)';
  try {
    new URL(url);
  } catch {
    return 'it is not a valid URL';
  }
  return undefined;
}

/** `url` as messages show it: a user name or password in it is left out (`…@`), not logged. */
export function shownUrl(url: string): string {
  return url.replace(/^(https?:\/\/)[^/]*@/, '$1…@');
}

/** Why a host (name or address) is local to the gateway, or undefined. */
export function localHostProblem(hostname: string): string | undefined {
  const host = hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return `${hostname} is a loopback host`;
  const family = isIP(host);
  if (family === 0 || !LOCAL_ADDRESSES.check(host, family === 6 ? 'ipv6' : 'ipv4')) return undefined;
  return `${hostname} is a loopback, link-local, unspecified or cloud metadata address (the gateway's own host, or the cloud metadata service)`;
}

/**
 * Why a FunctionService's `url` is refused, or undefined. Unless `allowLocal`, its host may be no
 * local address, nor a name that resolves to one now (a name that does not resolve is left to the
 * call, which says so).
 */
export async function functionServiceUrlProblem(
  url: string,
  allowLocal: boolean,
  resolve: (hostname: string) => Promise<string[]> = resolveAll,
): Promise<string | undefined> {
  const problem = urlProblem(url);
  if (problem) return `url ${shownUrl(url)} is refused: ${problem}`;
  if (allowLocal) return undefined;
  const { hostname } = new URL(url);
  const local =
    localHostProblem(hostname) ??
    (isIP(hostname.replace(/^\[|\]$/g, '')) === 0
      ? (await resolve(hostname).catch(() => []))
          .map((address) => localHostProblem(address) && `${hostname} resolves to ${address}`)
          .find((found) => found)
      : undefined);
  if (!local) return undefined;
  return `url ${url} is refused: ${local}; a gateway allows such hosts only when told to (--allow-loopback-functions, settings.calls.allowLoopback)`;
}

/**
 * How a FunctionService's host is resolved at each connection: as the system resolves it, refusing a
 * local address (localHostProblem), so that a name checked once cannot be made to resolve to one
 * later (DNS rebinding). A URL naming an address is not resolved, and was checked as it was read.
 */
export function refusingLocal(resolve: LookupFunction = lookupCallback as LookupFunction): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, options, (error, address, family) => {
      if (error) return callback(error, address, family);
      const found = typeof address === 'string' ? [address] : address.map((each) => each.address);
      const local = found.find((each) => localHostProblem(each));
      if (local === undefined) return callback(null, address, family);
      const refused = new Error(
        `${hostname} resolves to ${local}, a loopback, link-local, unspecified or cloud metadata address: ` +
          'refused (a FunctionService may name such hosts only with --allow-loopback-functions)',
      );
      callback(refused, address, family);
    });
  };
}

async function resolveAll(hostname: string): Promise<string[]> {
  return (await lookup(hostname, { all: true })).map((found) => found.address);
}

/**
 * Whether `url` matches `glob`, e.g. `https://*.ngrok.app` or `http://127.0.0.1:*`: compared with
 * the URL's origin and path (without a last `/`), each `*` standing for characters other than `/` and
 * `:`, so that it never reaches past a host or a path segment, nor into the port.
 */
export function matchesUrlGlob(url: string, glob: string): boolean {
  if (urlProblem(url)) return false;
  const parsed = new URL(url);
  const written = `${parsed.origin}${parsed.pathname.replace(/\/$/, '')}`;
  const pattern = glob
    .replace(/\/$/, '')
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/:]*');
  return new RegExp(`^${pattern}$`, 'i').test(written);
}
