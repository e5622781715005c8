import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { NodeRequestView, peerAddress } from '../../src/http/adapters/node-request.js';
import { ClientIpResolver } from '../../src/http/client-ip.js';
import { memoryLogger } from './support.js';

const NAMES = [
  'host',
  'x-forwarded-for',
  'forwarded',
  'x-forwarded-host',
  'accept',
  'x-api-key',
  'set-cookie',
  'cookie',
];

describe('NodeRequestView.hasHeader, on requests parsed by node', () => {
  /** For each request: NAMES as hasHeader and as header() see them, hasHeader asked first. */
  const seen: { has: boolean[]; value: boolean[] }[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const view = new NodeRequestView(req, new ClientIpResolver({}, memoryLogger()), req, undefined);
    const has = NAMES.map((n) => view.hasHeader(n));
    seen.push({ has, value: NAMES.map((n) => view.header(n) !== undefined) });
    res.end();
  });
  let port = 0;
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** Sends one request with exactly `lines` as its header section and waits for the answer. */
  const send = (lines: string[]): Promise<void> =>
    new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () =>
        socket.end(`GET / HTTP/1.1\r\n${lines.join('\r\n')}\r\nConnection: close\r\n\r\n`),
      );
      socket
        .on('data', () => {})
        .on('close', () => resolve())
        .on('error', reject);
    });

  it('finds a header whatever the case the client sent it in, and only by its whole name', async () => {
    await send([
      'Host: example.test',
      'X-FORWARDED-FOR: 192.0.2.1',
      'forwarded: for=192.0.2.2',
      'X-Forwarded-Hos: x',
      'Accept: a',
      'accept: b',
    ]);
    const last = seen.at(-1)!;
    assert.deepEqual(Object.fromEntries(NAMES.map((n, i) => [n, last.has[i]])), {
      host: true,
      'x-forwarded-for': true,
      forwarded: true,
      'x-forwarded-host': false,
      accept: true,
      'x-api-key': false,
      'set-cookie': false,
      cookie: false,
    });
  });

  it('agrees with header() on whether each header is there', async () => {
    await send(['Host: h', 'X-Api-Key: k', 'Set-Cookie: a=1', 'Cookie: c=2', 'X-Forwarded-For-Not: y']);
    await send(['Host: h', 'Forwarded: for=192.0.2.3', 'FORWARDED: for=192.0.2.4']);
    for (const s of seen.slice(-2)) assert.deepEqual(s.has, s.value);
  });
});

describe('peerAddress', () => {
  it("reads each socket's own address, keeps it, and keeps no answer for a socket without one", () => {
    let reads = 0;
    const socket = (address: string | undefined) => ({
      get remoteAddress() {
        reads++;
        return address;
      },
    });
    const a = socket('192.0.2.1');
    const b = socket('2001:db8::1');
    assert.deepEqual(
      [peerAddress(a), peerAddress(b), peerAddress(a), peerAddress(b)],
      ['192.0.2.1', '2001:db8::1', '192.0.2.1', '2001:db8::1'],
    );
    assert.equal(reads, 2, 'one read per socket');
    const late: { address?: string } = {};
    const closing = {
      get remoteAddress() {
        return late.address;
      },
    };
    assert.equal(peerAddress(closing), undefined);
    late.address = '198.51.100.7';
    assert.equal(peerAddress(closing), '198.51.100.7');
  });
});
