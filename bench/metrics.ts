/** Reads the apiserver's own request counters, so write counts come from the server, not from us. */

/**
 * Every verb `apiserver_request_total` reports for a write. Its verb is the HTTP method's (GET split
 * into GET, LIST and WATCH), except that a server-side apply, a PATCH as application/apply-patch, is
 * APPLY. A delete of a whole collection is therefore DELETE, never DELETECOLLECTION (checked on
 * kube-apiserver v1.34.10).
 */
const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'APPLY', 'DELETE']);

export interface WriteCounts {
  total: number;
  /** e.g. `PATCH kopfexamples/status`, `APPLY kopfexamples`, `POST events`. */
  byRequest: Record<string, number>;
}

/** Sums `apiserver_request_total` over write verbs for the given resources (of one API group, if given). */
export function countWrites(metricsText: string, resources: readonly string[], group?: string): WriteCounts {
  const byRequest: Record<string, number> = {};
  let total = 0;
  for (const line of metricsText.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries(
      [...line.matchAll(/(\w+)="([^"]*)"/g)].map((match) => [match[1] as string, match[2] as string]),
    );
    if (!WRITE_VERBS.has(labels.verb ?? '') || !resources.includes(labels.resource ?? '')) continue;
    if (group !== undefined && labels.group !== group) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    const key = `${labels.verb} ${labels.resource}${labels.subresource ? `/${labels.subresource}` : ''}`;
    byRequest[key] = (byRequest[key] ?? 0) + value;
    total += value;
  }
  return { total, byRequest };
}

/** What was written between two readings, less `own` writes (the benchmark's, by request). */
export function difference(
  after: WriteCounts,
  before: WriteCounts,
  own: Record<string, number> = {},
): WriteCounts {
  const byRequest: Record<string, number> = {};
  let total = 0;
  for (const [key, value] of Object.entries(after.byRequest)) {
    const delta = value - (before.byRequest[key] ?? 0) - (own[key] ?? 0);
    if (delta !== 0) byRequest[key] = delta;
    total += delta;
  }
  return { total, byRequest };
}

/** Sums `apiserver_request_total` for one verb on one resource, in one scope (namespace, cluster). */
export function countRequests(metricsText: string, verb: string, resource: string, scope: string): number {
  let total = 0;
  for (const line of metricsText.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    if (!line.includes(`verb="${verb}"`) || !line.includes(`resource="${resource}"`)) continue;
    if (!line.includes(`scope="${scope}"`) || /subresource="[^"]/.test(line)) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}
