/**
 * nginx's URI normalisation as a reference for the gateway's normal form: nginx (Debian's
 * nginx-light) runs on a free loopback port with its own prefix in a temp folder and answers each
 * request with its normalised `$uri`, which it fully percent-decodes. Where the gateway finds no
 * ambiguity, its normal form, decoded, must be nginx's `$uri` byte for byte; for each ambiguous
 * kind, the table records what nginx does, which is why the gateway refuses them by default.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { ambiguitiesIn, normalizeTarget } from '../src/config/normal-path.js';
import { closedPort } from './support/ports.js';

const NGINX = '/usr/sbin/nginx';
const MISSING = existsSync(NGINX) ? false : `nginx is not installed at ${NGINX} (apt-get install -y nginx-light)`;

/** Answer is nginx's status and body for one target. */
interface Answer {
  readonly status: number;
  readonly body: Buffer;
}

/** Sends `GET <target>` byte for byte and reads the whole answer (nginx closes the connection after it). */
function get(port: number, target: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write(`GET ${target} HTTP/1.1\r\nhost: ref\r\nconnection: close\r\n\r\n`, 'latin1'),
    );
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => reject(new Error(`nginx did not answer ${target}`)), 5_000);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      const all = Buffer.concat(chunks);
      const end = all.indexOf('\r\n\r\n');
      resolve({ status: Number(all.subarray(9, 12).toString()), body: all.subarray(end + 4) });
    });
  });
}

/** The bytes a normal path names: every escape decoded, as nginx's `$uri` has it. */
function decoded(path: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < path.length; i++) {
    if (path[i] === '%') {
      bytes.push(parseInt(path.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(path.charCodeAt(i));
  }
  return Buffer.from(bytes);
}

/** Path pieces with no ambiguity (nor characters a request line cannot carry raw). */
const piece = fc.oneof(
  fc.constantFrom('/', '//', '/./', '/../', '.', '..', '%2e', '%2E%2e', '.%2e'),
  fc.constantFrom('a', 'Bc', 'login', '%6c', '%6C', '%41', '%7e', '~', '-', '_', '!', '$', '&', "'", '(', '*', '+'),
  fc.constantFrom(',', '=', ':', '@', '%20', '%25', '%3F', '%3b', '%C3%A9', '%e2%82%ac', '%7B', '"', '|', '^'),
);
const target = fc.array(piece, { maxLength: 12 }).map((parts) => '/a/b/c/' + parts.join(''));

describe('the normal form against nginx’s', { skip: MISSING }, () => {
  let dir: string;
  let nginx: ChildProcess;
  let port: number;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'floodgate-nginx-'));
    port = await closedPort();
    await mkdir(join(dir, 'tmp'));
    const t = join(dir, 'tmp');
    await writeFile(
      join(dir, 'nginx.conf'),
      `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log crit;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${t}/body; proxy_temp_path ${t}/proxy; fastcgi_temp_path ${t}/fcgi;
  uwsgi_temp_path ${t}/uwsgi; scgi_temp_path ${t}/scgi;
  server {
    listen 127.0.0.1:${port};
    location / { return 200 "$uri"; }
  }
}
`,
    );
    nginx = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: 'ignore' });
    for (let i = 0; i < 100; i++) {
      const up = await get(port, '/').then(
        (a) => a.status === 200,
        () => false,
      );
      if (up) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('nginx did not start listening');
  });
  after(async () => {
    if (nginx !== undefined && nginx.exitCode === null) {
      const exited = new Promise((r) => nginx.once('exit', r));
      nginx.kill('SIGTERM');
      await exited;
    }
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('decodes to nginx’s $uri, byte for byte, wherever it finds no ambiguity', async () => {
    const samples = fc.sample(target, { numRuns: 400, seed: 22 });
    samples.push('/api/%6cogin', '//api/./login', '/api/x/../login', '/a/b/..', '/a/%2e', '/a/.%2e/b', '/%41%7e%2D');
    let compared = 0;
    for (const t of samples) {
      const normal = normalizeTarget(t)!;
      if (normal.ambiguities !== 0) continue;
      const answer = await get(port, t);
      assert.equal(answer.status, 200, t);
      assert.deepEqual(
        answer.body,
        decoded(normal.path),
        `${t}: ours ${normal.path}, nginx ${answer.body.toString('latin1')}`,
      );
      compared++;
    }
    assert.ok(compared >= 300, `compared ${compared} spellings`);
  });

  it('meets nginx where it refuses, and where it normalises, an ambiguous spelling', async () => {
    // [target, our ambiguity, nginx's status, nginx's $uri when 200]
    const table: readonly (readonly [string, string, number, string | undefined])[] = [
      ['/../api/login', 'aboveRoot', 400, undefined],
      ['/a/b/../../..', 'aboveRoot', 400, undefined],
      ['/api/login%00', 'controlCharacter', 400, undefined],
      ['/api/%zz', 'invalidEscape', 400, undefined],
      ['/api%2flogin', 'encodedSlash', 200, '/api/login'],
      ['/api/login#x', 'fragment', 200, '/api/login'],
      // nginx on Linux keeps these as data, where Java servers and WHATWG parsers do not: ambiguous.
      ['/api\\login', 'backslash', 200, '/api\\login'],
      ['/api%5clogin', 'backslash', 200, '/api\\login'],
      ['/api/login;x=1', 'pathParameter', 200, '/api/login;x=1'],
      ['/api%c0%aflogin', 'invalidUtf8', 200, '/api\xC0\xAFlogin'],
    ];
    for (const [t, kind, status, uri] of table) {
      assert.deepEqual(ambiguitiesIn(normalizeTarget(t)!.ambiguities), [kind], t);
      const answer = await get(port, t);
      assert.equal(answer.status, status, t);
      if (uri !== undefined) assert.equal(answer.body.toString('latin1'), uri, t);
      if (uri !== undefined && (kind === 'encodedSlash' || kind === 'fragment'))
        assert.equal(normalizeTarget(t)!.path, uri, `${t}: our normal form is nginx's`);
    }
  });
});
