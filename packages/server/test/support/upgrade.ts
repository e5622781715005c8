/** Test support: a raw WebSocket-style upgrade request, over TCP or TLS. */
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

const REQUEST =
  'GET /ws HTTP/1.1\r\nhost: gw\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n';

/**
 * upgrade sends an upgrade request for `/ws` on a fresh connection to `port` (over TLS, trusting
 * `ca`, when given) and resolves with the response head and the socket, open when upgraded.
 */
export function upgrade(port: number, ca?: string): Promise<{ head: string; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const hello = (): void => void socket.write(REQUEST);
    const socket: Socket =
      ca === undefined
        ? connect(port, '127.0.0.1', hello)
        : tlsConnect(
            { port, host: '127.0.0.1', ca: [ca], servername: 'localhost', ALPNProtocols: ['http/1.1'] },
            hello,
          );
    let text = '';
    const timer = setTimeout(() => reject(new Error(`no upgrade answer: ${text}`)), 5_000);
    socket.on('data', function onData(chunk: Buffer) {
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      clearTimeout(timer);
      socket.off('data', onData);
      resolve({ head: text.slice(0, end), socket });
    });
    socket.on('error', reject);
  });
}
