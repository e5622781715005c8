/**
 * The path normaliser's fuzzing against nginx (a bounded sample; path-nginx.test.ts beside the
 * other tests holds the table of ambiguous spellings): of the hostile targets a request line can
 * carry as they are, every one the normaliser finds no ambiguity in is one nginx accepts, and
 * nginx's `$uri` is the normal path decoded, byte for byte.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { normalizeTarget } from '../../src/config/normal-path.js';
import { runs } from '../../../floodgate/test/support/sweep.js';
import { NGINX_MISSING, startNginx, type RunningNginx } from '../support/nginx.js';
import { closedPort } from '../support/ports.js';
import { hostileTarget } from './path-inputs.js';

/** GETs `target` as its bytes and returns nginx's status and body (it closes the connection after). */
function get(port: number, target: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write(`GET ${target} HTTP/1.1\r\nhost: ref\r\nconnection: close\r\n\r\n`, 'latin1'),
    );
    const chunks: Buffer[] = [];
    socket.setTimeout(5_000, () => socket.destroy(new Error(`nginx did not answer ${target}`)));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const all = Buffer.concat(chunks);
      resolve({ status: Number(all.subarray(9, 12).toString()), body: all.subarray(all.indexOf('\r\n\r\n') + 4) });
    });
  });
}

/** The bytes a normal path names, every escape decoded, as nginx's `$uri` has them. */
function decoded(path: string): Buffer {
  return Buffer.from(
    path.replace(/%([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))),
    'latin1',
  );
}

/**
 * Whether a request line carries `target` as it is: visible ASCII only, no `#` (a client never
 * sends one), and short enough for nginx's default header buffers (8k; longer is refused 414).
 */
const sendable = (target: string): boolean =>
  target.length <= 4000 && /^[\x21-\x7e]+$/.test(target) && !target.includes('#');

describe('fuzzing the path normaliser against nginx', { skip: NGINX_MISSING }, () => {
  let nginx: RunningNginx;

  before(async () => {
    const port = await closedPort();
    const conf = `master_process off;
worker_processes 1;
pid nginx.pid;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path body; proxy_temp_path proxy; fastcgi_temp_path fcgi; uwsgi_temp_path uwsgi; scgi_temp_path scgi;
  server { listen 127.0.0.1:${port}; location / { return 200 "$uri"; } }
}
`;
    nginx = await startNginx(conf, port);
  });
  after(() => nginx?.stop());

  it('an unambiguous normal path decodes to nginx’s $uri, byte for byte', async () => {
    const samples = fc.sample(hostileTarget, { numRuns: runs(3000) }).filter(sendable);
    let compared = 0;
    for (const target of samples) {
      const normal = normalizeTarget(target);
      if (normal === undefined || normal.ambiguities !== 0) continue;
      const answer = await get(nginx.port, target);
      assert.equal(answer.status, 200, `nginx refuses ${target}, which we read as ${normal.path}`);
      assert.deepEqual(
        answer.body,
        decoded(normal.path),
        `${target}: ours ${normal.path}, nginx ${answer.body.toString('latin1')}`,
      );
      compared++;
    }
    console.log(
      `fuzz path normaliser against nginx: ${compared} of ${samples.length} sendable targets compared, 0 disagreements`,
    );
    assert.ok(compared >= 100, `only ${compared} targets compared`);
  });
});
