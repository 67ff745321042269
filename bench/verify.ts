/**
 * What a function service spends checking one request of the gateway: its token (Ed25519 from the
 * gateway's keys, HS256 in a session the gateway signed with them, or HS256 over a shared secret), its
 * body's digest (2 KB) and the replay check, in
 * this process, with node:crypto (the SDK on Node) and with jose and Web Crypto (the SDK on every other
 * runtime), in the same run. CPU per request counts every thread: Web Crypto's work runs on libuv's.
 *
 *   npm run bench:verify -- [--requests 5000]
 */
import { parseArgs } from 'node:util';
import { hmacSigner, keySigner, newKey, publicKeys, signingKeyOf } from '../gateway/internals.ts';
import {
  ReplayGuard,
  SESSION_HEADER,
  type VerificationKeys,
  verifyBody,
  verifyToken,
} from '../protocol/index.ts';
import { saveResults, say, table } from './common.ts';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '5000' } } });
const REQUESTS = Number(values.requests);
const WARM_UP = 200;

interface Result {
  name: string;
  requests: number;
  cpuMicroseconds: number;
  wallMicroseconds: number;
}

async function main(): Promise<void> {
  const stored = newKey(Date.now());
  const secret = new TextEncoder().encode('a secret shared with one service, 32+ bytes long');
  const body = new TextEncoder().encode(JSON.stringify({ object: { data: 'x'.repeat(2000) } }));
  const request = { audience: 'bench', method: 'POST', path: '/causeway/v1/admit', body };
  const keys = publicKeys([stored]) as VerificationKeys;
  const signers = {
    EdDSA: { sign: keySigner(() => key), keys, inSession: false },
    'EdDSA session': { sign: keySigner(() => key), keys, inSession: true },
    HS256: { sign: hmacSigner(secret), keys: secret as VerificationKeys, inSession: false },
  };
  const key = signingKeyOf(stored);
  const results: Result[] = [];
  for (const [algorithm, { sign, keys, inSession }] of Object.entries(signers)) {
    // undefined takes the checks' default, node:crypto on Node; null has them use jose and Web Crypto.
    for (const [checker, node] of [
      ['node:crypto', undefined],
      ['jose, Web Crypto', null],
    ] as const) {
      const proofs = Array.from({ length: REQUESTS + WARM_UP }, () => sign(request, inSession));
      const replays = new ReplayGuard();
      const check = async (proof: (typeof proofs)[number]) => {
        const claims = await verifyToken(keys, proof.authorization, request, proof[SESSION_HEADER], node);
        await verifyBody(claims, body, replays, node);
      };
      for (const proof of proofs.slice(0, WARM_UP)) await check(proof);
      const cpu = process.cpuUsage();
      const started = performance.now();
      for (const proof of proofs.slice(WARM_UP)) await check(proof);
      const wall = (performance.now() - started) * 1000;
      const used = process.cpuUsage(cpu);
      results.push({
        name: `${algorithm}, ${checker}`,
        requests: REQUESTS,
        cpuMicroseconds: (used.user + used.system) / REQUESTS,
        wallMicroseconds: wall / REQUESTS,
      });
    }
  }
  const lines = table(
    ['checker', 'CPU per request', 'wall per request'],
    results.map((result) => [
      result.name,
      `${result.cpuMicroseconds.toFixed(0)} µs`,
      `${result.wallMicroseconds.toFixed(0)} µs`,
    ]),
  );
  for (const line of lines) say(line);
  await saveResults('verify', { requests: REQUESTS, results });
}

await main();
