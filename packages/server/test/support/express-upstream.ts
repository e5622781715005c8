/**
 * Test support: a real Express application, with its default settings (case-insensitive routing,
 * non-strict trailing slash) or others, on a free loopback port, recording which handler saw which URL.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';

/** Seen is one request as the Express application saw it. */
export interface Seen {
  /** `login` for the /api/login handler, `other` for anything else. */
  readonly handler: 'login' | 'other';
  readonly url: string;
}

/** ExpressUpstream is a running Express application. */
export interface ExpressUpstream {
  readonly origin: string;
  readonly seen: Seen[];
  /** logins returns how many times the /api/login handler ran. */
  logins(): number;
  close(): Promise<void>;
}

/** ExpressSettings are the router settings to start with (both off by default, as in Express). */
export interface ExpressSettings {
  /** Express's `case sensitive routing`. */
  readonly caseSensitive?: boolean;
  /** Express's `strict routing` (a trailing slash makes another path). */
  readonly strict?: boolean;
}

/** startExpress starts an application with an `/api/login` handler and a catch-all, on 127.0.0.1. */
export async function startExpress(settings: ExpressSettings = {}): Promise<ExpressUpstream> {
  const seen: Seen[] = [];
  const app = express();
  app.set('case sensitive routing', settings.caseSensitive ?? false);
  app.set('strict routing', settings.strict ?? false);
  app.all('/api/login', (req, res) => {
    seen.push({ handler: 'login', url: req.originalUrl });
    res.json({ handler: 'login', url: req.originalUrl });
  });
  app.use((req, res) => {
    seen.push({ handler: 'other', url: req.originalUrl });
    res.status(404).json({ handler: 'other', url: req.originalUrl });
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    seen,
    logins: () => seen.filter((s) => s.handler === 'login').length,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
