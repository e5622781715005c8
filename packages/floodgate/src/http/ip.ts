/**
 * IP addresses as bytes: parsing (IPv4, IPv6, IPv4-mapped IPv6 read as IPv4), canonical text
 * (RFC 5952 for IPv6), prefix masks and CIDR ranges. Pure functions, no I/O.
 */
import { FloodgateError, describeValue } from '../core/errors.js';

/** IpAddress is a parsed address: 4 bytes for IPv4 (IPv4-mapped IPv6 included), 16 for IPv6. */
export interface IpAddress {
  readonly version: 4 | 6;
  readonly bytes: Uint8Array;
}

/** IpRange is a CIDR range such as `10.0.0.0/8` or `2001:db8::/32`. */
export interface IpRange extends IpAddress {
  /** Leading bits that must match (32 or 128 for a single address). */
  readonly prefixBits: number;
}

/**
 * parseIp returns the address in `text`, or undefined when it is not one. It accepts dotted IPv4
 * without leading zeros and any IPv6 form (a zone such as `%eth0` is dropped); an IPv4-mapped
 * IPv6 address (`::ffff:192.0.2.1`) comes back as IPv4, so both forms of a client share a key.
 */
export function parseIp(text: string): IpAddress | undefined {
  if (text.length === 0 || text.length > 64) return undefined;
  if (!text.includes(':')) {
    const bytes = parseIpv4(text);
    return bytes === undefined ? undefined : { version: 4, bytes };
  }
  const zone = text.indexOf('%');
  const bytes = parseIpv6(zone >= 0 ? text.slice(0, zone) : text);
  if (bytes === undefined) return undefined;
  if (isMappedIpv4(bytes)) return { version: 4, bytes: bytes.slice(12) };
  return { version: 6, bytes };
}

function parseIpv4(text: string): Uint8Array | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const part = parts[i]!;
    // Leading zeros are refused: some parsers read them as octal, so they name two addresses.
    if (!/^(0|[1-9]\d{0,2})$/.test(part)) return undefined;
    const n = Number(part);
    if (n > 255) return undefined;
    bytes[i] = n;
  }
  return bytes;
}

function parseIpv6(text: string): Uint8Array | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const head = groupsOf(halves[0]!);
  const tail = halves.length === 2 ? groupsOf(halves[1]!) : [];
  if (head === undefined || tail === undefined) return undefined;
  const given = head.length + tail.length;
  if (halves.length === 2 ? given > 7 : given !== 8) return undefined;
  const groups = [...head, ...new Array<number>(8 - given).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 0xff;
  });
  return bytes;
}

/** The 16-bit groups of one side of `::`; a trailing dotted IPv4 counts as two groups. */
function groupsOf(text: string): number[] | undefined {
  if (text === '') return [];
  const parts = text.split(':');
  const groups: number[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (i === parts.length - 1 && part.includes('.')) {
      const v4 = parseIpv4(part);
      if (v4 === undefined) return undefined;
      groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
    } else if (/^[0-9a-fA-F]{1,4}$/.test(part)) {
      groups.push(parseInt(part, 16));
    } else {
      return undefined;
    }
  }
  return groups;
}

function isMappedIpv4(bytes: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return false;
  return bytes[10] === 0xff && bytes[11] === 0xff;
}

/** formatIp returns the canonical text of `ip`: dotted IPv4, or RFC 5952 IPv6 (lower case, longest zero run as `::`). */
export function formatIp(ip: IpAddress): string {
  if (ip.version === 4) return ip.bytes.join('.');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((ip.bytes[i]! << 8) | ip.bytes[i + 1]!);
  const [start, length] = longestZeroRun(groups);
  if (length < 2) return groups.map((g) => g.toString(16)).join(':');
  const left = groups
    .slice(0, start)
    .map((g) => g.toString(16))
    .join(':');
  const right = groups
    .slice(start + length)
    .map((g) => g.toString(16))
    .join(':');
  return `${left}::${right}`;
}

/** The first longest run of zero groups, as [start, length]. */
function longestZeroRun(groups: readonly number[]): [number, number] {
  let best: [number, number] = [0, 0];
  let start = -1;
  for (let i = 0; i <= groups.length; i++) {
    if (i < groups.length && groups[i] === 0) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      if (i - start > best[1]) best = [start, i - start];
      start = -1;
    }
  }
  return best;
}

/** maskIp returns `ip` with every bit after the first `prefixBits` cleared. */
export function maskIp(ip: IpAddress, prefixBits: number): IpAddress {
  const bytes = ip.bytes.slice();
  for (let i = 0; i < bytes.length; i++) {
    const keep = Math.min(8, Math.max(0, prefixBits - 8 * i));
    bytes[i] = bytes[i]! & ((0xff << (8 - keep)) & 0xff);
  }
  return { version: ip.version, bytes };
}

/**
 * parseIpRange returns the range written as `address/bits` or a single address.
 *
 * @throws FloodgateError `INVALID_OPTION` naming `option` when `text` is not an address or CIDR range.
 */
export function parseIpRange(text: string, option: string): IpRange {
  const slash = text.indexOf('/');
  const addressText = slash >= 0 ? text.slice(0, slash) : text;
  const ip = parseIp(addressText);
  const maxBits = addressText.includes(':') ? 128 : 32;
  const bitsText = slash >= 0 ? text.slice(slash + 1) : String(maxBits);
  const bits = Number(bitsText);
  // An IPv4-mapped range (::ffff:10.0.0.0/104) is read as the IPv4 range it maps.
  const prefixBits = ip?.version === 4 && maxBits === 128 ? bits - 96 : bits;
  if (ip === undefined || !/^\d{1,3}$/.test(bitsText) || bits > maxBits || prefixBits < 0) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `${option} must be an IP address or CIDR range such as "10.0.0.0/8" or "2001:db8::/32", got ${describeValue(text)}`,
      option,
    );
  }
  return { ...maskIp(ip, prefixBits), prefixBits };
}

/** inRange returns whether `ip` lies in `range` (an IPv4 address never lies in an IPv6 range). */
export function inRange(range: IpRange, ip: IpAddress): boolean {
  if (range.version !== ip.version) return false;
  const full = range.prefixBits >> 3;
  for (let i = 0; i < full; i++) if (range.bytes[i] !== ip.bytes[i]) return false;
  const rest = range.prefixBits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (range.bytes[full]! & mask) === (ip.bytes[full]! & mask);
}
