import { generateKeyPair, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';

export const ADMIN_USER = 'causeway-admin';

export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

/** One line of kube-apiserver's --token-auth-file: token,user,uid,"groups". */
export function tokenAuthLine(token: string): string {
  return `${token},${ADMIN_USER},${ADMIN_USER},"system:masters"\n`;
}

export async function serviceAccountKeyPair(): Promise<{ publicPem: string; privatePem: string }> {
  const { publicKey, privateKey } = await promisify(generateKeyPair)('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { publicPem: publicKey, privatePem: privateKey };
}
