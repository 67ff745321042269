/** What the tests of the CLI's options share: files read by path, where the gateway runs, a refusal's message. */
import assert from 'node:assert/strict';
import { UsageError } from '../../gateway/cli/command-line.ts';
import type { Whereabouts } from '../../gateway/cli/process.ts';

/** Files by path, as a test gives them: reading another is an error, as it would be. */
export function files(contents: Record<string, string>) {
  return (path: string): string => {
    const text = contents[path];
    if (text === undefined) throw new Error(`ENOENT: ${path}`);
    return text;
  };
}

export const noFiles = files({});
export const SECRET = 'a-secret-shared-with-billing-alone-0123456789';
export const reads = {
  text: files({
    '/scopes/billing.yaml': 'resources: [invoices.billing.example.com]\n',
    '/scopes/broken.yaml': 'resources: [invoices]\nweather: sunny\n',
    '/ca.pem': 'THE CA',
  }),
  secret: (file: string) => {
    if (file !== '/secrets/billing') throw new Error(`ENOENT: ${file}`);
    return new TextEncoder().encode(SECRET);
  },
};
export const BILLING = 'billing=http://billing-functions:8080';
/** Out of a pod, with a kubeconfig whose context names no namespace. */
export const nowhere: Whereabouts = {};

export function refuses(run: () => unknown, message: string): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof UsageError, `a UsageError, not ${error}`);
    assert.equal(error.message, message);
    return true;
  });
}
