/** The flags of `causeway dev` alone; those it shares with other commands are in ../../flags/. */
import { SECRET_VARIABLE } from '../../../../protocol/index.ts';
import { flag, group } from '../../command-line.ts';

export const SESSION_SECONDS = flag({
  name: 'session-seconds',
  value: '<n>',
  default: '15',
  description:
    "The Lease's duration: after a crash, calls go back to the deployed service this long after the last renewal.",
});

/** The session `causeway dev` holds with a deployed gateway (dev). */
export const DEV_SESSION = group(
  'A dev session, with a gateway deployed in the cluster',
  flag({
    name: 'dev-sessions',
    value: '<namespace>',
    description:
      "Have the gateway deployed with --dev-sessions <namespace> send the module's service's calls here: hold a Lease for the service there (or its FunctionService's devSession field) while this runs, verifying calls with the gateway's public keys (--signing-keys) or its secret (--secret-file).",
  }),
  flag({
    name: 'signing-keys',
    value: '<ns/name>',
    description:
      "The gateway's --signing-keys: verify calls with its public keys, read from their ConfigMap.",
  }),
  flag({
    name: 'secret-file',
    value: '<path>',
    default: `$${SECRET_VARIABLE}`,
    description: 'Verify calls with a secret shared with the gateway.',
  }),
  SESSION_SECONDS,
  flag({
    name: 'dev-reach',
    value: '<how>',
    description:
      'How the deployed gateway reaches this machine: local (it runs on this host), ngrok (a tunnel; $NGROK_AUTHTOKEN), or auto (the default: local when the apiserver is on this host, ngrok otherwise).',
  }),
);
