/**
 * The listener's TLS files: read relative to the config file and checked as the listener would
 * use them (each PEM parses, the key belongs to the certificate), every mistake reported as a
 * config problem at the line naming the file, so that a bad certificate is refused at start and
 * at reload alike, and the one in service stays.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { createSecureContext } from 'node:tls';
import type { ListenConfig } from './listen-schema.js';
import { Locator, type ConfigProblem } from './problems.js';

/** TlsMaterial is what a TLS listener is built (or given a new secure context) from. */
export interface TlsMaterial {
  /** The absolute paths of the files read (certificate, key, CA), watched for changes like the config. */
  readonly files: readonly string[];
  readonly cert: Buffer;
  readonly key: Buffer;
  /** The CA of client certificates; undefined when clients are not asked for one. */
  readonly ca: Buffer | undefined;
  readonly minVersion: 'TLSv1.2' | 'TLSv1.3';
  /** The server certificate's expiry, for the log. */
  readonly validTo: string;
}

type FileKey = 'certFile' | 'keyFile' | 'caFile';

/**
 * loadTlsFiles returns the TLS material of `listen.tls` (undefined without the section), or every
 * problem found: a file that cannot be read, a PEM that does not parse, a key that is not the
 * certificate's, HTTP/2 asked for without TLS. `configText` places the problems on their lines.
 */
export async function loadTlsFiles(
  listen: ListenConfig,
  configFile: string,
  configText: string,
): Promise<{ material: TlsMaterial | undefined } | { problems: ConfigProblem[] }> {
  const at = Locator.ofText(configFile, configText);
  const tls = listen.tls;
  if (tls === undefined) {
    if (listen.http2 !== true) return { material: undefined };
    return {
      problems: [
        at.problem(
          ['listen', 'http2'],
          'http2 needs tls: HTTP/2 is offered on the TLS port only (cleartext h2c is not)',
          'add listen.tls with certFile and keyFile, or remove http2',
        ),
      ],
    };
  }
  const pathOf = (p: string): string => resolve(dirname(configFile), p);
  const problems: ConfigProblem[] = [];
  const read = async (key: FileKey, path: string): Promise<Buffer | undefined> => {
    try {
      return await readFile(pathOf(path));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      problems.push(
        at.problem(
          ['listen', 'tls', key],
          `cannot read ${pathOf(path)}: ${code}`,
          'give the path (relative to this config file) of a readable PEM file',
        ),
      );
      return undefined;
    }
  };
  const cert = await read('certFile', tls.certFile);
  const key = await read('keyFile', tls.keyFile);
  const ca = tls.caFile === undefined ? undefined : await read('caFile', tls.caFile);
  if (problems.length > 0 || cert === undefined || key === undefined) return { problems };
  const checked = checkPem({ cert, key, ca }, (k, message, hint) => at.problem(['listen', 'tls', k], message, hint));
  if ('problems' in checked) return checked;
  const files = [tls.certFile, tls.keyFile, ...(tls.caFile === undefined ? [] : [tls.caFile])].map(pathOf);
  return { material: { files, cert, key, ca, minVersion: tls.minVersion, validTo: checked.validTo } };
}

/** The problems of PEM contents the listener cannot use, or the certificate's expiry when it can. */
function checkPem(
  pem: { cert: Buffer; key: Buffer; ca: Buffer | undefined },
  problem: (key: FileKey, message: string, hint: string) => ConfigProblem,
): { validTo: string } | { problems: ConfigProblem[] } {
  const problems: ConfigProblem[] = [];
  let validTo = '';
  try {
    validTo = new X509Certificate(pem.cert).validTo;
  } catch (err) {
    problems.push(
      problem(
        'certFile',
        `not a PEM certificate: ${(err as Error).message}`,
        'give a PEM file starting with -----BEGIN CERTIFICATE-----, the server certificate first',
      ),
    );
  }
  try {
    createPrivateKey(pem.key);
  } catch (err) {
    problems.push(
      problem(
        'keyFile',
        `not a PEM private key: ${(err as Error).message}`,
        'give an unencrypted PEM private key (-----BEGIN PRIVATE KEY-----)',
      ),
    );
  }
  if (pem.ca !== undefined) {
    try {
      createSecureContext({ ca: pem.ca });
    } catch (err) {
      problems.push(
        problem('caFile', `not PEM CA certificates: ${(err as Error).message}`, 'give a PEM bundle of CA certificates'),
      );
    }
  }
  if (problems.length > 0) return { problems };
  try {
    createSecureContext({ cert: pem.cert, key: pem.key });
  } catch (err) {
    return {
      problems: [
        problem(
          'keyFile',
          `the key does not belong to the certificate: ${(err as Error).message}`,
          "give the certificate's own key (a renewed certificate comes with a new key: replace both files)",
        ),
      ],
    };
  }
  return { validTo };
}
