/**
 * Forwarding headers read by their grammar and from the right: RFC 7239 `Forwarded` (quoted
 * strings with escapes, `;`-separated pairs, `,`-separated elements, obfuscated identifiers, ports,
 * bracketed IPv6) and the `X-Forwarded-For` list.
 *
 * Why from the right: a proxy appends its element to whatever the client sent, so only the
 * right-most elements were written by proxies the operator trusts, and only they are well formed
 * by construction. Read from the left, a client's unterminated quote (`for="`) would swallow the
 * proxies' elements. Read from the right, a well-formed element ends where its own text ends:
 * inside a well-formed quoted string a `"` is escaped exactly when an odd run of backslashes
 * precedes it, so the parse of the proxies' elements never depends on the client's prefix.
 */
import { formatIp, parseIp } from './ip.js';

/**
 * UNKNOWN_NODE is the node text of an element that names no client: `for=unknown`, an element
 * without `for=`, or an element that does not parse.
 */
export const UNKNOWN_NODE = 'unknown';

const COMMA = 0x2c;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Returned by {@link elementStart} when quotes do not balance: nothing further left can be read. */
const MALFORMED = -2;
/** Characters of a token (RFC 9110 tchar), plus `:`, `[` and `]`, which proxies write unquoted in ports and IPv6. */
const VALUE_CHARS = /^[!#$%&'*+.^_`|~0-9A-Za-z:[\]-]+$/;
const TOKEN_CHARS = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** RFC 7239 obfnode and obfport: `_` and one or more of ALPHA, DIGIT, `.`, `_`, `-`. */
const OBFUSCATED = /^_[A-Za-z0-9._-]+$/;
const PORT = /^(\d{1,5}|_[A-Za-z0-9._-]+)$/;

/**
 * forwardedNodes returns the `for=` nodes of the last `count` elements of a `Forwarded` field
 * value, nearest the server first. Each is a canonical address (`192.0.2.1`, `2001:db8::1`), an
 * obfuscated identifier as written (`_hidden`, RFC 7239 section 6.3), or {@link UNKNOWN_NODE}.
 * Empty elements are skipped, as RFC 9110's list syntax says. An element that does not parse
 * reads as `unknown` and ends the list: what lies to its left cannot be delimited.
 *
 * @example
 * forwardedNodes('for=", for=203.0.113.66', 1); // ['203.0.113.66']: the client's open quote swallows nothing
 */
export function forwardedNodes(value: string, count: number): string[] {
  const nodes: string[] = [];
  let end = value.length;
  while (nodes.length < count && end > 0) {
    const start = elementStart(value, end);
    if (start === MALFORMED) {
      nodes.push(UNKNOWN_NODE);
      break;
    }
    const element = value.slice(start + 1, end).trim();
    if (element !== '') nodes.push(forNodeOf(element));
    end = start;
  }
  return nodes;
}

/**
 * xForwardedForNodes returns the last `count` entries of an `X-Forwarded-For` value (a
 * comma-separated list of addresses), nearest the server first, each as a canonical address or
 * {@link UNKNOWN_NODE} when it is not one. An entry may carry a port (`192.0.2.1:8080`,
 * `[2001:db8::1]:443`); empty entries are skipped.
 */
export function xForwardedForNodes(value: string, count: number): string[] {
  const nodes: string[] = [];
  let end = value.length;
  while (nodes.length < count && end > 0) {
    const start = value.lastIndexOf(',', end - 1);
    const entry = value.slice(start + 1, end).trim();
    if (entry !== '') nodes.push(addressNode(entry));
    end = start;
  }
  return nodes;
}

/** isAddressNode tells whether a node text is an address (not `unknown`, not obfuscated). */
export function isAddressNode(node: string): boolean {
  return node !== UNKNOWN_NODE && node.charCodeAt(0) !== 0x5f;
}

/**
 * The index of the comma before the element that ends at `end` (-1 at the start of the value),
 * scanning right to left over quoted strings; {@link MALFORMED} when a quote does not balance.
 */
function elementStart(value: string, end: number): number {
  for (let i = end - 1; i >= 0; i--) {
    const c = value.charCodeAt(i);
    if (c === COMMA) return i;
    if (c !== QUOTE) continue;
    // Outside a quoted string a `"` closes one; an escaped one here means the quotes do not balance.
    if (escaped(value, i)) return MALFORMED;
    i = openingQuote(value, i - 1);
    if (i < 0) return MALFORMED;
  }
  return -1;
}

/** The index of the unescaped `"` that opens the quoted string whose content ends at `from`, or -1. */
function openingQuote(value: string, from: number): number {
  for (let j = from; j >= 0; j--) {
    if (value.charCodeAt(j) === QUOTE && !escaped(value, j)) return j;
  }
  return -1;
}

/** Whether the character at `i` is escaped: an odd run of backslashes precedes it. */
function escaped(value: string, i: number): boolean {
  let run = 0;
  while (i - run - 1 >= 0 && value.charCodeAt(i - run - 1) === BACKSLASH) run++;
  return run % 2 === 1;
}

/**
 * The node of one element's `for=` pair: pairs are `token=value` separated by `;` (empty pairs
 * allowed, whitespace around `;` tolerated), a value is a token or a quoted string, and a
 * parameter may occur once. Anything else makes the element `unknown`.
 */
function forNodeOf(element: string): string {
  let found: string | undefined;
  let i = 0;
  while (i < element.length) {
    const semicolon = pairEnd(element, i);
    if (semicolon === MALFORMED) return UNKNOWN_NODE;
    const pair = element.slice(i, semicolon).trim();
    i = semicolon + 1;
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0 || !TOKEN_CHARS.test(pair.slice(0, eq))) return UNKNOWN_NODE;
    const raw = valueOf(pair.slice(eq + 1));
    if (raw === undefined) return UNKNOWN_NODE;
    if (pair.slice(0, eq).toLowerCase() !== 'for') continue;
    if (found !== undefined) return UNKNOWN_NODE; // a parameter occurs at most once per element
    found = raw;
  }
  return found === undefined ? UNKNOWN_NODE : nodeOf(found);
}

/** The index of the `;` ending the pair that starts at `from` (or the element's length), skipping quoted strings. */
function pairEnd(element: string, from: number): number {
  for (let i = from; i < element.length; i++) {
    const c = element.charCodeAt(i);
    if (c === 0x3b) return i;
    if (c === BACKSLASH) return MALFORMED; // a backslash belongs inside a quoted string only
    if (c !== QUOTE) continue;
    for (i++; i < element.length && element.charCodeAt(i) !== QUOTE; i++) {
      if (element.charCodeAt(i) === BACKSLASH) i++;
    }
    if (i >= element.length) return MALFORMED;
  }
  return element.length;
}

/** A pair's value: a token as is, a quoted string without its quotes and escapes; undefined when neither. */
function valueOf(text: string): string | undefined {
  if (text.charCodeAt(0) !== QUOTE) return VALUE_CHARS.test(text) ? text : undefined;
  if (text.length < 2 || text.charCodeAt(text.length - 1) !== QUOTE) return undefined;
  let out = '';
  for (let i = 1; i < text.length - 1; i++) {
    const c = text[i]!;
    if (c === '"') return undefined; // an unescaped quote inside: the string ended early
    if (c === '\\') {
      if (i + 1 >= text.length - 1) return undefined;
      out += text[++i];
    } else {
      out += c;
    }
  }
  return out;
}

/** A `for=` value (RFC 7239 node: nodename [":" port]) as node text. */
function nodeOf(node: string): string {
  if (node.startsWith('[')) {
    const close = node.indexOf(']');
    if (close < 0) return UNKNOWN_NODE;
    const rest = node.slice(close + 1);
    if (rest !== '' && !(rest.startsWith(':') && PORT.test(rest.slice(1)))) return UNKNOWN_NODE;
    const ip = parseIp(node.slice(1, close));
    return ip === undefined ? UNKNOWN_NODE : formatIp(ip);
  }
  const colon = node.indexOf(':');
  // Two or more colons: an IPv6 address without brackets, which some proxies write quoted.
  if (colon >= 0 && colon !== node.lastIndexOf(':')) return canonical(node);
  const name = colon < 0 ? node : node.slice(0, colon);
  if (colon >= 0 && !PORT.test(node.slice(colon + 1))) return UNKNOWN_NODE;
  if (OBFUSCATED.test(name)) return name;
  return canonical(name);
}

/** An X-Forwarded-For entry, with or without a port, as node text. */
function addressNode(entry: string): string {
  if (entry.startsWith('[')) return nodeOf(entry);
  const colon = entry.indexOf(':');
  if (colon >= 0 && colon === entry.lastIndexOf(':')) {
    return /^\d{1,5}$/.test(entry.slice(colon + 1)) ? canonical(entry.slice(0, colon)) : UNKNOWN_NODE;
  }
  return canonical(entry);
}

function canonical(text: string): string {
  const ip = parseIp(text);
  return ip === undefined ? UNKNOWN_NODE : formatIp(ip);
}
