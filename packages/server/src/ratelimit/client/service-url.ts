/** The address of a decision service, as its clients take it. */
import { FloodgateError } from 'floodgate';

/** ServiceUrlRule says which schemes an option accepts and how to describe them in an error. */
export interface ServiceUrlRule {
  /** The accepted protocols, with their colon: `http:`, `https:`, `grpc:`. */
  readonly protocols: readonly string[];
  /** The option's name, e.g. `RemoteStore.url`. */
  readonly option: string;
  /** What a right value looks like, e.g. `http://host:port (the JSON API)`. */
  readonly expected: string;
}

/**
 * parseServiceUrl returns `text` as a URL with one of `rule.protocols` and a host, or throws
 * `INVALID_OPTION` naming `rule.option` and what it expected.
 */
export function parseServiceUrl(text: unknown, rule: ServiceUrlRule): URL {
  let url: URL | undefined;
  try {
    url = typeof text === 'string' ? new URL(text) : undefined;
  } catch {
    url = undefined;
  }
  if (url === undefined || !rule.protocols.includes(url.protocol) || url.host === '') {
    throw new FloodgateError(
      'INVALID_OPTION',
      `${rule.option} must be ${rule.expected}, got ${JSON.stringify(text)}`,
      rule.option,
    );
  }
  return url;
}
