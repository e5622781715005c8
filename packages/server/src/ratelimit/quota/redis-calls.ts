/**
 * The Redis ledger's key layout and its script calls, built without I/O: which keys a bucket has,
 * and how a batch of reports or a release becomes script calls, one per hash slot on a Redis
 * Cluster (a script may only touch keys of one slot) and one in all on a single Redis.
 */
import { hashSlotOf } from 'floodgate/redis';
import type { LedgerEntry } from './ledger.js';

/**
 * bucketKeysOf returns bucket `bucketKey`'s two Redis keys under `prefix` (which ends with
 * `rlqs:`): its hash, `${prefix}{b:${bucketKey}}`, and its sorted set of expiries, the same with
 * `:expiry` after it. `b:` and the bucket key are their hash tag (Redis hashes from the first `{`
 * to the next `}`), so both hash to one slot whatever the bucket key holds: they agree up to that
 * `}`. The `b:` keeps the tag from being empty (and the two keys apart) when a domain starts with
 * `}`. A prefix holding a `{...}` of its own becomes the tag instead, putting every bucket in that
 * one slot.
 */
export function bucketKeysOf(prefix: string, bucketKey: string): [hash: string, expiry: string] {
  const hash = `${prefix}{b:${bucketKey}}`;
  return [hash, `${hash}:expiry`];
}

/** SLOTS is how many hash slots a Redis Cluster has. */
const SLOTS = 16_384;
let slotTags: string[] | undefined;

/**
 * sentinelKeyOf returns the key of the ledger's sentinel (its epoch, see `redis-script.ts`) that a
 * call to hash slot `slot` names: on a single Redis (`cluster` false) one for all,
 * `${prefix}epoch`; on a cluster one per slot, `${prefix}{<tag>}:epoch` with a tag that hashes
 * to `slot`, so that a call's keys share its slot. A prefix with a hash tag of its own puts every
 * bucket in its slot, and its sentinel with them.
 */
export function sentinelKeyOf(prefix: string, slot: number, cluster: boolean): string {
  const open = prefix.indexOf('{');
  const tagged = open >= 0 && prefix.indexOf('}', open + 1) > open + 1;
  if (!cluster || tagged) return `${prefix}epoch`;
  slotTags ??= tagsOfSlots();
  return `${prefix}{${slotTags[slot]!}}:epoch`;
}

/** tagsOfSlots returns, per hash slot, the shortest decimal number whose `{n}` hashes to it (found once, in a few milliseconds). */
function tagsOfSlots(): string[] {
  const tags = new Array<string>(SLOTS);
  let left = SLOTS;
  for (let n = 0; left > 0; n++) {
    const slot = hashSlotOf(`{${n}}`);
    if (tags[slot] === undefined) {
      tags[slot] = String(n);
      left--;
    }
  }
  return tags;
}

/** GrantReport is one report waiting for its grants: its client and its buckets, in order. */
export interface GrantReport {
  readonly client: string;
  readonly entries: readonly LedgerEntry[];
}

/** GrantCall is one script call of a batch of reports, and where each grant it answers goes. */
export interface GrantCall {
  /** The hash slot of its keys (0 on a single Redis). */
  readonly slot: number;
  /** Each bucket's hash and expiry set (the sentinel is not among them). */
  readonly keys: string[];
  /** `grant`, then one argument per report with entries in this call (see `redis-script.ts`). */
  readonly args: string[];
  /** Per grant the call answers, in order: its report (index in the batch) and entry (index in that report). */
  readonly targets: Array<readonly [report: number, entry: number]>;
  /** The reports (indexes in the batch) with an entry in this call, ascending. */
  readonly reports: number[];
}

/**
 * grantCallsOf returns the script calls that grant `batch` under `prefix`: one when `cluster` is
 * false, else one per hash slot of the batch's buckets (in the order each slot is first met). In
 * every call the reports keep their batch order and each report its entries' order, so the
 * reports that share a bucket are granted in the order they were asked. Empty for an empty batch.
 */
export function grantCallsOf(batch: readonly GrantReport[], prefix: string, cluster: boolean): GrantCall[] {
  const calls = new Map<number, GrantCall & { readonly index: Map<string, number> }>();
  const numberOf = (n: number | undefined): string => String(n ?? 0);
  batch.forEach((report, r) => {
    report.entries.forEach((e, i) => {
      const [hash, expiry] = bucketKeysOf(prefix, e.bucketKey);
      const slot = cluster ? hashSlotOf(hash) : 0;
      let call = calls.get(slot);
      if (call === undefined)
        calls.set(slot, (call = { slot, keys: [], args: ['grant'], targets: [], reports: [], index: new Map() }));
      let k = call.index.get(e.bucketKey);
      if (k === undefined) {
        k = call.index.size + 1;
        call.index.set(e.bucketKey, k);
        call.keys.push(hash, expiry);
      }
      if (call.reports[call.reports.length - 1] !== r) {
        call.reports.push(r);
        call.args.push(report.client);
      }
      call.args[call.args.length - 1] +=
        ` ${k} ${e.limit} ${e.demand ?? '-'} ${e.ttlSeconds * 1000} ${numberOf(e.held)}`;
      call.targets.push([r, i]);
    });
  });
  return [...calls.values()].map(({ slot, keys, args, targets, reports }) => ({ slot, keys, args, targets, reports }));
}

/**
 * releaseKeysOf returns the keys of `bucketKeys` under `prefix`, one list per script call with its
 * slot: all in one when `cluster` is false (slot 0), else one list per hash slot. Empty when
 * `bucketKeys` is.
 */
export function releaseKeysOf(
  bucketKeys: readonly string[],
  prefix: string,
  cluster: boolean,
): Array<{ readonly slot: number; readonly keys: string[] }> {
  const calls = new Map<number, string[]>();
  for (const bucketKey of bucketKeys) {
    const keys = bucketKeysOf(prefix, bucketKey);
    const slot = cluster ? hashSlotOf(keys[0]) : 0;
    const call = calls.get(slot);
    if (call === undefined) calls.set(slot, keys);
    else call.push(...keys);
  }
  return [...calls].map(([slot, keys]) => ({ slot, keys }));
}
