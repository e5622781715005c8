/**
 * Finding the client's address: the socket's peer, or, through proxies the operator trusts,
 * the address those proxies recorded in `X-Forwarded-For` or `Forwarded` (RFC 7239).
 */
import { FloodgateError, describeValue } from '../core/errors.js';
import { BoundedCache } from './cache.js';
import { forwardedNodes, isAddressNode, xForwardedForNodes } from './forwarded.js';
import { formatIp, inRange, parseIp, parseIpRange, type IpRange } from './ip.js';
import type { Logger } from './logger.js';

/** ForwardedHeader names the header trusted proxies record the client in. */
export type ForwardedHeader = 'x-forwarded-for' | 'forwarded';

/** TrustProxyOptions says which proxies in front of the server are believed. */
export interface TrustProxyOptions {
  /**
   * Proxies to trust: `false` or `0` (default) trusts none and keys by the socket address; a hop
   * count `n` trusts the `n` proxies nearest the server whatever their address; a list of
   * addresses and CIDR ranges (IPv4 and IPv6) trusts proxies whose address is listed.
   */
  trustProxy?: false | number | readonly string[];
  /**
   * The header trusted proxies write: `x-forwarded-for` (default) or `forwarded` (RFC 7239).
   * Either is read by its grammar from the right. An element within the trusted part that names
   * no address gives the request its own key, never the proxy's: `ip:unknown` when it says
   * `unknown` or does not parse (shared only by such requests, and never allow-listed), the
   * obfuscated identifier itself (`ip:_hidden`) when the proxy wrote one.
   */
  forwardedHeader?: ForwardedHeader;
}

/** Entries read from a forwarding header at most; a longer chain keeps its last (nearest) ones. */
const MAX_HOPS = 32;
/** Canonical forms remembered per resolver before the cache starts over. */
const CACHE_SIZE = 4096;
/** Longest text that can be an address (see parseIp), so the longest worth remembering. */
const MAX_ADDRESS_LENGTH = 64;
/** Forwarding chains (peer and header value) remembered per resolver with the client they name. */
const CHAIN_CACHE_SIZE = 1024;
/** Longest peer-and-header text remembered; a longer chain is walked on each request. */
const MAX_CHAIN_LENGTH = 512;

/**
 * HeaderSource is what {@link ClientIpResolver} reads of a request's headers: a header's value
 * (name in lower case), and optionally whether it is there at all, where that is cheaper to learn.
 */
export interface HeaderSource {
  /** header returns the value of the header `name` (lower case), undefined when it is absent. */
  header(name: string): string | undefined;
  /** hasHeader returns whether the header `name` (lower case) is there at all, without reading it. */
  hasHeader?(name: string): boolean;
}

/**
 * ClientIpResolver turns a socket address and a request's headers into the client's canonical
 * address, per {@link TrustProxyOptions}. It warns once through its logger when forwarding
 * headers arrive that the configuration ignores.
 */
export class ClientIpResolver {
  private readonly hops: number;
  private readonly ranges: readonly IpRange[] | undefined;
  private readonly header: ForwardedHeader;
  private readonly canonical = new BoundedCache<string>(CACHE_SIZE, MAX_ADDRESS_LENGTH);
  /** The client found for `<canonical peer> <header value>`: the walk depends on nothing else. */
  private readonly chains = new BoundedCache<string>(CHAIN_CACHE_SIZE, MAX_CHAIN_LENGTH);
  private warned = false;
  private warnedUnknown = false;
  private warnedUnparsed = false;

  constructor(
    options: TrustProxyOptions,
    private readonly logger: Logger,
  ) {
    const trust = options.trustProxy ?? false;
    this.header = options.forwardedHeader ?? 'x-forwarded-for';
    if (this.header !== 'x-forwarded-for' && this.header !== 'forwarded') {
      throw new FloodgateError(
        'INVALID_OPTION',
        `forwardedHeader must be "x-forwarded-for" or "forwarded", got ${describeValue(this.header)}`,
        'forwardedHeader',
      );
    }
    if (Array.isArray(trust)) {
      this.hops = 0;
      this.ranges = trust.map((r: unknown, i) => parseIpRange(String(r), `trustProxy[${i}]`));
    } else if (trust === false || (typeof trust === 'number' && Number.isSafeInteger(trust) && trust >= 0)) {
      this.hops = trust === false ? 0 : trust;
      this.ranges = undefined;
    } else {
      throw new FloodgateError(
        'INVALID_OPTION',
        `trustProxy must be false, a whole number of proxy hops, or a list of CIDR ranges, got ${describeValue(trust)}`,
        'trustProxy',
      );
    }
  }

  /**
   * resolve returns the client's canonical address; an obfuscated identifier (`_hidden`) when a
   * trusted proxy recorded the client as one; or `unknown` when the socket has no address, or a
   * trusted proxy's element says `unknown`, has no `for=`, or does not parse. A client's own
   * prefix to the header never changes the answer (elements are read from the right).
   */
  resolve(remoteAddress: string | undefined, headers: HeaderSource): string {
    const peer = this.canonicalOf(remoteAddress);
    if (this.hops === 0 && this.ranges === undefined) {
      if (!this.warned) this.warnIfForwarded(headers, 'trustProxy is not set');
      return peer;
    }
    const value = headers.header(this.header);
    if (value === undefined) {
      if (!this.warned) this.warnIfForwarded(headers, `trustProxy reads "${this.header}" only`);
      return peer;
    }
    // A long chain is walked each time: it is never remembered, so not worth copying into a memo key.
    if (value.length > MAX_CHAIN_LENGTH) return this.walk(peer, value);
    // The canonical peer never holds a space, so the memo key names one (peer, value) pair.
    const memo = `${peer} ${value}`;
    let client = this.chains.get(memo);
    if (client === undefined) {
      client = this.walk(peer, value);
      this.chains.set(memo, client);
    }
    return client;
  }

  /**
   * canonicalize returns an address already resolved elsewhere (a framework's own `req.ip`) in the
   * canonical form `resolve` gives: `192.0.2.1` for `::ffff:192.0.2.1`; `unknown` when absent or
   * not an address.
   */
  canonicalize(address: string | undefined): string {
    return this.canonicalOf(address);
  }

  /**
   * The client behind the trusted proxies, from the socket's peer and the forwarding header's
   * value, read from the right (see forwarded.ts). When the walk meets an element that names no
   * address (`unknown`, an obfuscated identifier, or one that does not parse) it stops there and
   * that element is the client: never the proxy to its right, whose address other clients share
   * and an allow-list may cover.
   */
  private walk(peer: string, value: string): string {
    const wanted = this.ranges === undefined ? Math.min(this.hops, MAX_HOPS) : MAX_HOPS;
    const nodes = this.header === 'forwarded' ? forwardedNodes(value, wanted) : xForwardedForNodes(value, wanted);
    let client = peer;
    for (let i = 0; i < nodes.length; i++) {
      // Past the peer, a node that is no address ends the walk; the peer's own (none, outside node) does not.
      if (i > 0 && !isAddressNode(client)) break;
      if (this.ranges === undefined ? i >= this.hops : !this.trusted(client)) break;
      client = nodes[i]!;
    }
    if (client === 'unknown' && !this.warnedUnparsed) this.warnUnparsed(value);
    return client;
  }

  /**
   * A trusted proxy wrote an element that names no address (`unknown`, or one that does not
   * parse): every such request shares the key `ip:unknown`. Not the proxy's own address, as nginx's
   * realip module would take: a proxy that passes a client's header on would then let any client
   * borrow the proxy's key (and its allow-listing) by sending garbage. Said once, as it is most
   * likely the proxy's configuration.
   */
  private warnUnparsed(value: string): void {
    this.warnedUnparsed = true;
    this.logger.warn(
      `floodgate: a trusted proxy's ${this.header} names no client address (${JSON.stringify(value.slice(0, 200))}): such requests share the key "ip:unknown", never the proxy's own; make the proxy write each client's address (nginx: $proxy_add_x_forwarded_for). (Logged once.)`,
    );
  }

  private trusted(address: string): boolean {
    const ip = parseIp(address);
    return ip !== undefined && this.ranges!.some((range) => inRange(range, ip));
  }

  /** The canonical text of an address (cached), or `unknown`. */
  private canonicalOf(address: string | undefined): string {
    if (address === undefined) {
      if (!this.warnedUnknown) {
        this.warnedUnknown = true;
        this.logger.warn(
          'floodgate: the runtime gave no client address, so clients keyed by IP share the key "ip:unknown"; with Hono outside node, pass remoteAddress. (Logged once.)',
        );
      }
      return 'unknown';
    }
    let text = this.canonical.get(address);
    if (text === undefined) {
      const ip = parseIp(address);
      text = ip === undefined ? 'unknown' : formatIp(ip);
      this.canonical.set(address, text);
    }
    return text;
  }

  private warnIfForwarded(headers: HeaderSource, why: string): void {
    // Called on every request until it warns, so it allocates nothing and asks only whether the headers are there.
    const seen = carries(headers, 'x-forwarded-for')
      ? 'x-forwarded-for'
      : carries(headers, 'forwarded')
        ? 'forwarded'
        : undefined;
    if (seen === undefined) return;
    this.warned = true;
    this.logger.warn(
      `floodgate: a request carried "${seen}" but ${why}, so the header is ignored and clients are keyed by ` +
        "the socket address. Behind a proxy every client then shares the proxy's key: set trustProxy to the " +
        'number of proxies (e.g. 1) or their CIDR ranges, and forwardedHeader to the header they write. ' +
        'Without a proxy, leave it: the header is spoofed and rightly ignored. (Logged once.)',
    );
  }
}

/** Whether the request carries the header `name`. */
function carries(headers: HeaderSource, name: string): boolean {
  return headers.hasHeader === undefined ? headers.header(name) !== undefined : headers.hasHeader(name);
}
