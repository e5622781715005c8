/**
 * Test support for the TLS listener: self-signed certificates made by openssl when a test runs
 * (never committed), and HTTP/2 and HTTPS clients that report what they saw, the server's
 * certificate included.
 */
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { connect as h2connect, type ClientHttp2Session, type OutgoingHttpHeaders } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';

/** TestCert is a self-signed certificate for 127.0.0.1 and localhost, with its key, as files and PEM. */
export interface TestCert {
  readonly certFile: string;
  readonly keyFile: string;
  readonly cert: string;
  readonly key: string;
  /** The SHA-256 fingerprint, as node's `getPeerCertificate().fingerprint256` shows it. */
  readonly fingerprint: string;
}

/** CertDir makes certificates in a temp directory and removes it. */
export class CertDir {
  readonly dir = mkdtempSync(join(tmpdir(), 'floodgate-tls-'));

  /** make returns a new self-signed P-256 certificate named `name` (valid for a day). */
  make(name: string): TestCert {
    const certFile = join(this.dir, `${name}.crt`);
    const keyFile = join(this.dir, `${name}.key`);
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        `/CN=${name}`,
        '-addext',
        'subjectAltName=IP:127.0.0.1,DNS:localhost',
        '-keyout',
        keyFile,
        '-out',
        certFile,
      ],
      { stdio: 'ignore' },
    );
    const cert = readFileSync(certFile, 'utf8');
    return { certFile, keyFile, cert, key: readFileSync(keyFile, 'utf8'), fingerprint: fingerprintOf(cert) };
  }

  /** signed returns a client certificate named `name` signed by `ca` (a certificate from {@link make}). */
  signed(name: string, ca: TestCert): TestCert {
    const certFile = join(this.dir, `${name}.crt`);
    const keyFile = join(this.dir, `${name}.key`);
    const csr = join(this.dir, `${name}.csr`);
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    execFileSync('openssl', ['req', '-new', ...ec, '-subj', `/CN=${name}`, '-keyout', keyFile, '-out', csr], {
      stdio: 'ignore',
    });
    const cert = execFileSync(
      'openssl',
      ['x509', '-req', '-in', csr, '-CA', ca.certFile, '-CAkey', ca.keyFile, '-CAcreateserial', '-days', '1'],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
    );
    writeFileSync(certFile, cert);
    return { certFile, keyFile, cert, key: readFileSync(keyFile, 'utf8'), fingerprint: fingerprintOf(cert) };
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** opensslMissing returns why the TLS tests cannot run (no openssl), or undefined when they can. */
export function opensslMissing(): string | undefined {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'openssl is not installed (Debian: apt-get install openssl)';
  }
}

function fingerprintOf(pem: string): string {
  return new X509Certificate(pem).fingerprint256;
}

/** Answer is one response as a client saw it. */
export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** h2session opens an HTTP/2 connection to `port` trusting the certificates `ca`. */
export function h2session(port: number, ca: readonly string[]): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = h2connect(`https://127.0.0.1:${port}`, { ca: [...ca] });
    session.once('connect', () => resolve(session));
    session.once('error', reject);
  });
}

/** h2request sends one request on `session` (`body` written in full, then ended) and resolves with the answer. */
export function h2request(
  session: ClientHttp2Session,
  headers: OutgoingHttpHeaders,
  body?: Buffer | string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers);
    let status = 0;
    let answerHeaders: Record<string, string | string[] | undefined> = {};
    let text = '';
    stream.on('response', (h) => {
      status = Number(h[':status']);
      answerHeaders = h as Record<string, string | string[] | undefined>;
    });
    stream.setEncoding('utf8');
    stream.on('data', (c: string) => (text += c));
    stream.on('end', () => resolve({ status, headers: answerHeaders, body: text }));
    stream.on('error', reject);
    stream.end(body);
  });
}

/** httpsGet sends one HTTPS/1.1 request (a new connection) and resolves with the answer and the protocol ALPN chose. */
export function httpsGet(
  port: number,
  path: string,
  options: { ca: readonly string[]; headers?: Record<string, string> },
): Promise<Answer & { alpn: string | false }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        ca: [...options.ca],
        headers: options.headers,
        agent: false,
        // As curl and browsers do: offered, HTTP/1.1 only (https.request's types leave out the TLS option).
        ALPNProtocols: ['http/1.1'],
      } as RequestOptions,
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: text,
            alpn: (res.socket as import('node:tls').TLSSocket).alpnProtocol ?? false,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** peerFingerprint opens a new TLS connection to `port` and returns the SHA-256 fingerprint of the certificate it was shown. */
export function peerFingerprint(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false, ALPNProtocols: ['h2'] }, () => {
      const fingerprint = socket.getPeerCertificate().fingerprint256;
      socket.destroy();
      resolve(fingerprint);
    });
    socket.on('error', reject);
  });
}
