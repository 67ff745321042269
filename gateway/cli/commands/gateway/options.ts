/** `causeway gateway`'s flags, checked: the gateway's options with its function services. */
import type { GatewayOptions } from '../../../gateway.ts';
import { type GroupValues, UsageError } from '../../command-line.ts';
import {
  budgetSettings,
  ENDPOINT,
  type FUNCTION_SERVICES,
  functionServiceFlags,
  perService,
} from '../../flags/function-services.ts';
import { type SIGNING, signingSettings } from '../../flags/signing.ts';
import { type GatewayValues, gatewayOptions } from '../../gateway-options.ts';
import type { ReadText, Whereabouts } from '../../process.ts';
import { integer, namespacedName } from '../../values.ts';
import type { DEV_SESSIONS_ALLOWED } from './flags.ts';

export type GatewayOnlyValues = GatewayValues &
  GroupValues<typeof FUNCTION_SERVICES | typeof SIGNING | typeof DEV_SESSIONS_ALLOWED>;

/** What `causeway gateway` starts, all but the secret it shares with every service (--secret-file). */
export function gatewayOnlyOptions(
  values: GatewayOnlyValues,
  read: { text: ReadText; secret: (file: string) => Uint8Array },
  whereabouts: Whereabouts,
): Omit<GatewayOptions, 'secret' | 'logger'> {
  if (!values.functions?.length && !values['function-services'])
    throw new UsageError(`needs at least one --functions ${ENDPOINT}, or --function-services <namespace>`);
  const { functions, served, scopes, certificates, secretFiles } = functionServiceFlags(values, read.text);
  const devSessionUrls = perService(
    values['function-dev-sessions'],
    '--function-dev-sessions',
    '<name>=<url-glob>[,<url-glob>...], e.g. billing=https://*.ngrok.app',
    served,
    (globs) => {
      const urls = globs.split(',');
      return urls.every((glob) => /^https?:\/\/[^?#@\s]+$/.test(glob)) ? urls : undefined;
    },
  );
  const maxSeconds = values['dev-session-max-seconds'];
  const sessionSeconds =
    maxSeconds === undefined ? undefined : integer(maxSeconds, '--dev-session-max-seconds');
  if (sessionSeconds !== undefined && sessionSeconds < 1)
    throw new UsageError('--dev-session-max-seconds expects at least 1');
  const login = values['login-from'];
  if (login !== undefined && !served.has(login))
    throw new UsageError(`--login-from names "${login}", which no --functions gives`);
  const shared = gatewayOptions(values, read.text, whereabouts);
  const certificateAuthority = values['function-certificates'];
  return {
    ...shared,
    functions: functions.map((endpoint) => {
      const secretFile = secretFiles.get(endpoint.name);
      const certificate = certificates.get(endpoint.name);
      const scope = scopes.get(endpoint.name);
      const urls = devSessionUrls.get(endpoint.name);
      return {
        ...endpoint,
        ...(secretFile ? { secret: read.secret(secretFile) } : {}),
        ...(certificate ? { certificate } : {}),
        ...(scope ? { scope } : {}),
        ...(urls ? { devSessions: { urls, ...(sessionSeconds ? { maxSeconds: sessionSeconds } : {}) } } : {}),
      };
    }),
    ...(values['dev-sessions'] ? { devSessions: values['dev-sessions'] } : {}),
    ...(values['function-services'] ? { functionServices: values['function-services'] } : {}),
    settings: {
      ...shared.settings,
      calls: {
        ...shared.settings?.calls,
        ...(values['functions-ca'] ? { ca: read.text(values['functions-ca']) } : {}),
        ...(values['function-concurrency']
          ? { concurrencyPerService: integer(values['function-concurrency'], '--function-concurrency') }
          : {}),
        ...budgetSettings(values),
        ...(values['allow-plain-http'] ? { plainHttp: true } : {}),
        ...(values.unscoped ? { unscoped: true } : {}),
        ...(values['allow-loopback-functions'] ? { allowLoopback: true } : {}),
        ...(certificateAuthority
          ? { certificateAuthority: namespacedName(certificateAuthority, '--function-certificates') }
          : {}),
      },
      signing: signingSettings(values),
    },
  };
}
