/** Reading a gateway's Prometheus metrics in tests, as Prometheus reads them. */
import assert from 'node:assert/strict';
import type { Gateway } from '../../gateway/gateway.ts';
import { eventually } from './operator.ts';

/** Prometheus text as samples: `name{a="1",b="2"}` (labels sorted) → value. */
export function samples(text: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(match, `a line of the exposition format: ${line}`);
    const labels = [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)]
      .map(([, name, value]) => `${name}="${value}"`)
      .sort();
    found.set(`${match[1]}{${labels.join(',')}}`, Number(match[3]));
  }
  return found;
}

/** The sample of `name` with these labels, 0 when there is none. */
export function sample(all: Map<string, number>, name: string, labels: Record<string, string>): number {
  const key = Object.entries(labels)
    .map(([label, value]) => `${label}="${value}"`)
    .sort()
    .join(',');
  return all.get(`${name}{${key}}`) ?? 0;
}

/** The gateway's metrics now (it must have been started with `metrics`). */
export async function scrape(gateway: Gateway): Promise<Map<string, number>> {
  assert.ok(gateway.metrics, 'the gateway serves metrics');
  const response = await fetch(gateway.metrics);
  assert.equal(response.status, 200);
  return samples(await response.text());
}

/**
 * Waits until no change the gateway has been shown waits to be handled: none queued, in a cycle, to
 * be retried or waiting for a service. What a cycle of a change already shown would call or write has
 * been called and written by then. (Which changes it has been shown is the caller's to know: an
 * `on.event` handler's call says so.)
 */
export function everythingHandled(gateway: Gateway): Promise<true> {
  return eventually('every change handled', async () => {
    const all = await scrape(gateway);
    const waiting = [...all].filter(
      ([key, value]) => key.startsWith('causeway_oldest_unhandled_seconds{') && value > 0,
    );
    return waiting.length === 0 ? true : undefined;
  });
}
