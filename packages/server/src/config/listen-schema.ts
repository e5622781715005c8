/**
 * The config of the traffic listener: its address, and TLS termination with HTTP/2 beside
 * HTTP/1.1 on the same port (chosen per connection by ALPN).
 */
import * as z from 'zod';

/** tlsSchema is the traffic listener's TLS: PEM files read relative to the config file, reloaded with it. */
export const tlsSchema = z.strictObject({
  certFile: z
    .string()
    .min(1)
    .describe("The certificate chain (PEM, the server's certificate first), relative to the config file."),
  keyFile: z.string().min(1).describe("The certificate's private key (PEM, unencrypted), relative to the config file."),
  caFile: z
    .string()
    .min(1)
    .optional()
    .describe(
      'CA certificates (PEM) client certificates must chain to: when set, every client must present one (mutual TLS).',
    ),
  minVersion: z
    .enum(['TLSv1.2', 'TLSv1.3'])
    .default('TLSv1.2')
    .describe('The oldest TLS version accepted (default TLSv1.2).'),
});

/** listenSchema is the traffic listener: where it listens, and whether it terminates TLS and speaks HTTP/2. */
export const listenSchema = z.strictObject({
  host: z
    .string()
    .default('127.0.0.1')
    .describe('The address to listen on (default 127.0.0.1; 0.0.0.0 or :: for every interface).'),
  port: z
    .number()
    .int()
    .min(0)
    .max(65535)
    .default(8080)
    .describe('The port to listen on (default 8080; 0 for any free port).'),
  tls: tlsSchema
    .optional()
    .describe('TLS termination: the listener speaks HTTPS only. Certificates are read again at every reload.'),
  http2: z
    .boolean()
    .optional()
    .describe(
      'HTTP/2 beside HTTP/1.1 on the TLS port, by ALPN (default true with tls; needs tls: cleartext h2c is not offered).',
    ),
});

/** ListenConfig is the checked listen section. */
export type ListenConfig = z.output<typeof listenSchema>;

/** TlsConfig is the checked listen.tls section. */
export type TlsConfig = z.output<typeof tlsSchema>;
