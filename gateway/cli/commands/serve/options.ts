import { type GroupValues, UsageError } from '../../command-line.ts';
import { integer } from '../../values.ts';
import { HOST, type LISTENING, PORT } from './flags.ts';
import type { ServeOptions } from './serve.ts';

/** Where `causeway serve` listens, and the certificate it serves HTTPS with. */
export function serveOptions(values: GroupValues<typeof LISTENING>): Omit<ServeOptions, 'logger'> {
  const [cert, key] = [values['tls-cert'], values['tls-key']];
  if ((cert === undefined) !== (key === undefined))
    throw new UsageError('--tls-cert and --tls-key go together');
  return {
    port: integer(values.port ?? PORT.default, '--port'),
    host: values.host ?? HOST.default,
    ...(cert && key ? { tls: { certFile: cert, keyFile: key } } : {}),
  };
}
