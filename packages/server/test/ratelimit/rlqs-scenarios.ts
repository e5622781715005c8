/**
 * The RLQS edge scenarios (#35) on a {@link Fleet}, shared by rlqs-edges.test.ts (a few runs, with
 * assertions) and bench/rlqs-edges.ts (many, printing counts): join and leave storms over two
 * replicas, and a ledger lost under steady clients. Each returns what a {@link GrantSampler} saw.
 */
import { Redis } from 'ioredis';
import type { RedisServers } from '../../../floodgate/test/support/redis-server.js';
import {
  EDGE_LIMIT,
  EDGE_TTL_MS,
  FleetClient,
  GrantSampler,
  sleep,
  type Fleet,
  type SampleCounts,
} from './rlqs-fleet.js';

/** STORM_CLIENTS join a bucket at once in each storm, alternately on replica 0 and 1. */
export const STORM_CLIENTS = 20;

/**
 * joinStorms runs `storms` join storms: 20 clients, each wanting 5 to 44 requests a second (400
 * in all, 4 times the limit), swinging by half from one report to the next, start within 100 ms
 * split over two replicas; 1.2 s later half of them leave, 0.8 s after that the rest. The grants
 * held are summed every 10 ms throughout.
 */
export async function joinStorms(fleet: Fleet, options: { readonly storms: number }): Promise<SampleCounts> {
  let clients: FleetClient[] = [];
  const sampler = new GrantSampler(() => clients, EDGE_LIMIT);
  for (let storm = 0; storm < options.storms; storm++) {
    clients = Array.from(
      { length: STORM_CLIENTS },
      (_, i) => new FleetClient(fleet, i % 2, { wantPerSecond: 5 + ((i * 7) % 40), swing: 0.5 }),
    );
    // Joins spread over 100 ms, so that one replica's answers and passes fall between the other's.
    clients.forEach((c, i) => setTimeout(() => c.start(), (i * 37) % 100));
    await sleep(1200);
    for (const c of clients.slice(0, STORM_CLIENTS / 2)) c.close();
    await sleep(800);
    for (const c of clients) c.close();
    await sleep(300);
  }
  return sampler.stop();
}

/** LedgerLoss is what {@link ledgerLoss} saw: the counts of each phase, and the grants held at the end. */
export interface LedgerLoss {
  readonly counts: Readonly<Record<'steady' | 'flushall' | 'restart', SampleCounts>>;
  readonly grantedAfter: number;
}

/**
 * ledgerLoss runs four clients (two per replica, 60 requests a second each, reporting a quarter of
 * an interval apart) for 2 s, then calls
 * `flush` (FLUSHALL) and waits one TTL and 2 s, then `restart` (redis-server killed and started
 * again without persistence) and waits one TTL and 4 s: long enough for every grant given before to
 * have expired and for grants to be given again.
 */
/** ledgerFaults returns the two losses {@link ledgerLoss} inflicts on the fleet's redis-server: a FLUSHALL, and a kill and restart without persistence. */
export function ledgerFaults(redis: RedisServers): { flush: () => Promise<void>; restart: () => Promise<void> } {
  return {
    flush: async () => {
      const admin = new Redis({ port: redis.ports[0]!, host: '127.0.0.1' });
      await admin.flushall();
      admin.disconnect();
    },
    restart: async () => {
      await redis.kill(0);
      await sleep(500);
      await redis.restart(0);
    },
  };
}

export async function ledgerLoss(
  fleet: Fleet,
  actions: { readonly flush: () => Promise<void>; readonly restart: () => Promise<void> },
): Promise<LedgerLoss> {
  const clients = [0, 0, 1, 1].map((replica) => new FleetClient(fleet, replica, { wantPerSecond: 60 }));
  // Their reports a quarter of an interval apart: after a loss, one client reports while the
  // others still hold what they were granted before it.
  clients.forEach((c, i) => setTimeout(() => c.start(), i * 250));
  const phase = async (before: () => Promise<void>, waitMs: number): Promise<SampleCounts> => {
    const sampler = new GrantSampler(() => clients, EDGE_LIMIT);
    await before();
    await sleep(waitMs);
    return sampler.stop();
  };
  try {
    const steady = await phase(() => Promise.resolve(), 2000);
    const flushall = await phase(actions.flush, EDGE_TTL_MS + 2000);
    const restart = await phase(actions.restart, EDGE_TTL_MS + 4000);
    const grantedAfter = clients.reduce((s, c) => s + (c.grant ?? 0), 0);
    return { counts: { steady, flushall, restart }, grantedAfter };
  } finally {
    for (const c of clients) c.close();
  }
}
