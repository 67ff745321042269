/**
 * A function service written to attack the gateway: a real operator of causeway/functions (so it
 * verifies the gateway's signatures and speaks protocol v1 as any service does) whose manifest and
 * answers are rewritten on the way out, to what a compromised service would send.
 */
import { PATHS } from '../../protocol/index.ts';
import type { NamedHandler } from './operator.ts';

/** The call a rewrite answers, as the gateway sent it. */
export interface HostileCall {
  /** The invocation (or batch) the gateway sent, parsed. */
  request: Record<string, unknown>;
  /** What the honest operator answered, parsed. */
  answer: Record<string, unknown>;
}

export interface Attack {
  /** The manifest the service publishes, from the honest one. */
  manifest?(honest: Record<string, unknown>): unknown;
  /**
   * The answer to an invocation: a JSON value to send instead of the honest answer, a string sent as
   * it is (JSON text: in an object literal `__proto__` sets the prototype instead of making a key), or
   * a whole Response (a body that never ends, say). Undefined keeps the honest answer.
   */
  answer?(call: HostileCall): unknown | Response | undefined;
}

/** `service` with its manifest and answers rewritten by `attack`; only what passes its verification reaches the rewrite. */
export function hostileService(service: NamedHandler, attack: Attack): NamedHandler {
  return {
    name: service.name,
    async fetch(request: Request): Promise<Response> {
      const path = new URL(request.url).pathname;
      const sent = path === PATHS.invoke ? await request.clone().text() : undefined;
      const honest = await service.fetch(request);
      if (honest.status !== 200) return honest;
      if (path === PATHS.manifest && attack.manifest) {
        return json(attack.manifest((await honest.json()) as Record<string, unknown>));
      }
      if (path === PATHS.invoke && attack.answer && sent !== undefined) {
        const answer = (await honest.json()) as Record<string, unknown>;
        const rewritten = await attack.answer({ request: JSON.parse(sent), answer });
        if (rewritten instanceof Response) return rewritten;
        return json(rewritten === undefined ? answer : rewritten);
      }
      return honest;
    },
  };
}

/** The handler ids an invocation calls, in order. */
export function calledHandlers(request: Record<string, unknown>): string[] {
  const handlers = request.handlers as Array<{ id: string }> | undefined;
  return (handlers ?? []).map((handler) => handler.id);
}

function json(value: unknown): Response {
  // Written as text: JSON.stringify keeps a `__proto__` own key, which a hostile reply relies on.
  return new Response(typeof value === 'string' ? value : JSON.stringify(value), {
    headers: { 'content-type': 'application/json' },
  });
}
