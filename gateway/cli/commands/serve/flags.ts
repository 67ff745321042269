/** The flags of `causeway serve` alone; those it shares with other commands are in ../../flags/. */
import { JWKS_URL_VARIABLE, JWKS_VARIABLE, SECRET_VARIABLE } from '../../../../protocol/index.ts';
import { flag, group } from '../../command-line.ts';

export const PORT = flag({
  name: 'port',
  short: 'p',
  value: '<port>',
  default: '8080',
  description: 'Port to listen on.',
});

export const HOST = flag({
  name: 'host',
  value: '<address>',
  default: '0.0.0.0',
  description: 'Address to listen on.',
});

/** Where `causeway serve` listens (serve). */
export const LISTENING = group(
  'Listening',
  PORT,
  HOST,
  flag({
    name: 'tls-cert',
    value: '<file>',
    description:
      "Serve HTTPS with this certificate (PEM), and --tls-key its key; both read again when they change (the Secret a gateway's --function-tls renews, mounted), looked at every 10 s.",
  }),
  flag({ name: 'tls-key', value: '<file>', description: "The certificate's key (PEM)." }),
);

/** What `causeway serve` verifies the gateway's calls with (serve). */
export const VERIFYING = group(
  'Verifying the calls',
  flag({
    name: 'jwks-file',
    value: '<file>',
    default: `$${JWKS_VARIABLE}, then $${JWKS_URL_VARIABLE}`,
    description:
      "Verify calls with the gateway's public keys in this file (its ConfigMap's jwks.json, mounted), followed as it changes.",
  }),
  flag({
    name: 'secret-file',
    value: '<path>',
    default: `$${SECRET_VARIABLE}`,
    description: 'Verify with a secret shared with the gateway.',
  }),
);
