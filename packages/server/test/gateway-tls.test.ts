/**
 * The TLS listener's certificates with a gateway process and real TLS clients: a certificate
 * replaced on disk is in service for the next connection (the open ones keep theirs), a bad one
 * at reload is refused with its file, line and fix while the one in service stays, a bad one at
 * start is a config problem like any other, HTTPS without HTTP/2 when asked, and client
 * certificates required when a CA is given.
 */
import assert from 'node:assert/strict';
import { copyFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { loadConfig } from '../src/config/load.js';
import { ConfigError, formatProblem } from '../src/config/problems.js';
import { startGateway, type GatewayProcess, type LogLine } from './support/gateway-process.js';
import {
  CertDir,
  h2request,
  h2session,
  httpsGet,
  opensslMissing,
  peerFingerprint,
  type TestCert,
} from './support/tls.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

const skip = opensslMissing();

/** The problems loadConfig finds in `yaml` (written to a temp file), formatted. */
async function problemsOf(yaml: string): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-tls-config-'));
  const file = join(dir, 'floodgate.yaml');
  await writeFile(file, yaml);
  try {
    await loadConfig(file, {});
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems.map(formatProblem);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Replaces the gateway's config file at once (a rename), so that its watcher never reads half of it. */
async function replaceConfig(gw: GatewayProcess, yaml: string): Promise<void> {
  await writeFile(`${gw.configFile}.next`, yaml);
  await rename(`${gw.configFile}.next`, gw.configFile);
}

/** The first log line from `from` on that `found` accepts, waited for up to 10 s. */
async function logLine(gw: GatewayProcess, from: number, found: (line: LogLine) => boolean): Promise<LogLine> {
  for (let i = 0; i < 200; i++) {
    const line = gw.logs.slice(from).find(found);
    if (line !== undefined) return line;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no such log line; logs:\n${gw.logs.map((l) => JSON.stringify(l)).join('\n')}`);
}

/** The problems of the first rejected reload from `from` on whose problems match `pattern`. */
async function rejection(gw: GatewayProcess, from: number, pattern: RegExp): Promise<string[]> {
  const line = await logLine(
    gw,
    from,
    (l) =>
      l.msg === 'config reload rejected; the running config stays in force' &&
      (l.problems as string[]).some((p) => pattern.test(p)),
  );
  return line.problems as string[];
}

describe('the TLS certificate, reloaded in place (a gateway process, real TLS clients)', { skip }, () => {
  let certs: CertDir;
  let first: TestCert;
  let second: TestCert;
  let third: TestCert;
  /** The files the gateway's config names: certificates are copied over them. */
  let live: { certFile: string; keyFile: string };
  let upstream: TestUpstream;
  let gw: GatewayProcess;

  const config = (certFile: string, keyFile: string): string => `
listen:
  tls: { certFile: ${certFile}, keyFile: ${keyFile} }
routes:
  - name: api
    upstream: ${upstream.origin}
`;

  before(async () => {
    certs = new CertDir();
    first = certs.make('first');
    second = certs.make('second');
    third = certs.make('third');
    live = { certFile: join(certs.dir, 'live.crt'), keyFile: join(certs.dir, 'live.key') };
    copyFileSync(first.certFile, live.certFile);
    copyFileSync(first.keyFile, live.keyFile);
    upstream = await startUpstream();
    gw = await startGateway(config(live.certFile, live.keyFile));
  });

  after(async () => {
    await gw?.stop();
    await upstream?.close();
    certs?.remove();
  });

  test('a certificate replaced on disk is shown to the next connection; an open HTTP/2 session keeps its own and goes on', async () => {
    assert.equal(await peerFingerprint(gw.port), first.fingerprint);
    const open = await h2session(gw.port, [first.cert]);
    const from = gw.logs.length;
    copyFileSync(second.keyFile, live.keyFile);
    copyFileSync(second.certFile, live.certFile);
    // The key and certificate are written one after the other: a reload may see them mismatched first.
    const reloaded = await gw.waitForLog('TLS certificate reloaded', from);
    assert.deepEqual(reloaded.files, [live.certFile, live.keyFile]);
    assert.equal(await peerFingerprint(gw.port), second.fingerprint);
    assert.equal((await httpsGet(gw.port, '/a', { ca: [second.cert] })).status, 200);
    assert.equal((await h2request(open, { ':path': '/still' })).status, 200);
    assert.equal((open.socket as import('node:tls').TLSSocket).getPeerCertificate().fingerprint256, first.fingerprint);
    open.close();
  });

  test('a config naming other files puts them in service at reload, with no "restart" warning', async () => {
    const from = gw.logs.length;
    await replaceConfig(gw, config(third.certFile, third.keyFile));
    await logLine(gw, from, (l) => l.msg === 'TLS certificate reloaded' && (l.files as string[])[0] === third.certFile);
    assert.equal(await peerFingerprint(gw.port), third.fingerprint);
    const warned = gw.logs.slice(from).filter((l) => String(l.msg).includes('next restart'));
    assert.deepEqual(warned, []);
  });

  test('a certificate that is not PEM is refused at reload with its file, line and fix; the one in service stays', async () => {
    const from = gw.logs.length;
    const broken = join(certs.dir, 'broken.crt');
    writeFileSync(broken, 'not a certificate\n');
    await replaceConfig(gw, config(broken, third.keyFile));
    const problems = await rejection(gw, from, /broken|certFile/);
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /floodgate\.yaml:3:\d+ listen\.tls\.certFile: not a PEM certificate/);
    assert.match(problems[0]!, /\(fix: give a PEM file starting with -----BEGIN CERTIFICATE-----/);
    assert.equal(await peerFingerprint(gw.port), third.fingerprint);
  });

  test("a key that is not the certificate's is refused at reload, naming the key file; the one in service stays", async () => {
    const from = gw.logs.length;
    await replaceConfig(gw, config(third.certFile, first.keyFile));
    const problems = await rejection(gw, from, /keyFile/);
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /listen\.tls\.keyFile: the key does not belong to the certificate/);
    assert.equal(await peerFingerprint(gw.port), third.fingerprint);
    assert.equal((await httpsGet(gw.port, '/a', { ca: [third.cert] })).status, 200);
  });
});

describe('TLS config problems, found before serving', { skip }, () => {
  let certs: CertDir;
  let cert: TestCert;
  let other: TestCert;

  before(() => {
    certs = new CertDir();
    cert = certs.make('cert');
    other = certs.make('other');
  });

  after(() => certs?.remove());

  test('files relative to the config file that do not exist, each at its line', async () => {
    const problems = await problemsOf(`
listen:
  tls:
    certFile: missing.crt
    keyFile: missing.key
routes:
  - { name: api, upstream: "http://127.0.0.1:1" }
`);
    assert.equal(problems.length, 2);
    assert.match(
      problems[0]!,
      /:4:\d+ listen\.tls\.certFile: cannot read \/.*\/missing\.crt: ENOENT \(fix: give the path/,
    );
    assert.match(problems[1]!, /:5:\d+ listen\.tls\.keyFile: cannot read \/.*\/missing\.key: ENOENT/);
  });

  test('a mismatched pair, and http2 without tls', async () => {
    const mismatched = await problemsOf(`
listen: { tls: { certFile: ${cert.certFile}, keyFile: ${other.keyFile} } }
routes:
  - { name: api, upstream: "http://127.0.0.1:1" }
`);
    assert.equal(mismatched.length, 1);
    assert.match(
      mismatched[0]!,
      /listen\.tls\.keyFile: the key does not belong to the certificate.*\(fix: give the certificate's own key/,
    );
    const h2c = await problemsOf(`
listen: { port: 8080, http2: true }
routes:
  - { name: api, upstream: "http://127.0.0.1:1" }
`);
    assert.equal(h2c.length, 1);
    assert.match(
      h2c[0]!,
      /listen\.http2: http2 needs tls.*\(fix: add listen\.tls with certFile and keyFile, or remove http2\)/,
    );
  });
});

describe('HTTPS without HTTP/2, and required client certificates (gateway processes)', { skip }, () => {
  let certs: CertDir;
  let server: TestCert;
  let ca: TestCert;
  let client: TestCert;
  let upstream: TestUpstream;
  let plain: GatewayProcess;
  let mutual: GatewayProcess;

  before(async () => {
    certs = new CertDir();
    server = certs.make('server');
    ca = certs.make('client-ca');
    client = certs.signed('client', ca);
    upstream = await startUpstream();
    plain = await startGateway(`
listen: { tls: { certFile: ${server.certFile}, keyFile: ${server.keyFile} }, http2: false }
routes:
  - { name: api, upstream: "${upstream.origin}" }
`);
    mutual = await startGateway(`
listen: { tls: { certFile: ${server.certFile}, keyFile: ${server.keyFile}, caFile: ${ca.certFile} } }
routes:
  - { name: api, upstream: "${upstream.origin}" }
`);
  });

  after(async () => {
    await plain?.stop();
    await mutual?.stop();
    await upstream?.close();
    certs?.remove();
  });

  test('http2: false serves HTTPS/1.1 only: an h2 client is offered no h2', async () => {
    assert.equal(plain.logs.find((l) => l.msg === 'listening')?.protocols, 'https');
    assert.equal((await httpsGet(plain.port, '/a', { ca: [server.cert] })).status, 200);
    const alpn = await new Promise<string | false>((resolve, reject) => {
      const socket = tlsConnect(
        { host: '127.0.0.1', port: plain.port, ca: [server.cert], ALPNProtocols: ['h2', 'http/1.1'] },
        () => {
          resolve(socket.alpnProtocol ?? false);
          socket.destroy();
        },
      );
      socket.on('error', reject);
    });
    assert.notEqual(alpn, 'h2');
  });

  test('with caFile, a client without a certificate is refused in the handshake; one signed by the CA is served', async () => {
    await assert.rejects(h2session(mutual.port, [server.cert]).then((s) => h2request(s, { ':path': '/a' })));
    const session = await new Promise<import('node:http2').ClientHttp2Session>((resolve, reject) => {
      void import('node:http2').then(({ connect }) => {
        const s = connect(`https://127.0.0.1:${mutual.port}`, {
          ca: [server.cert],
          cert: client.cert,
          key: client.key,
        });
        s.once('connect', () => resolve(s));
        s.once('error', reject);
      });
    });
    assert.equal((await h2request(session, { ':path': '/mtls' })).status, 200);
    session.close();
  });
});
