/** Redaction: what of a config may be shown or logged, with every secret replaced. */

const SECRET_KEYS = new Set(['token', 'secret', 'password']);
/** REDACTED replaces each secret value. */
export const REDACTED = '[redacted]';

/**
 * redactConfig returns a deep copy of `value` with every `token`, `secret` and `password` value
 * replaced and the password of any URL (`redis://user:pass@host`) masked.
 */
export function redactConfig(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactConfig);
  if (typeof value === 'string') return value.replace(/^(\w+:\/\/[^:/@]*:)[^@]*@/, `$1${REDACTED}@`);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value))
    out[k] = SECRET_KEYS.has(k) && v !== undefined ? REDACTED : redactConfig(v);
  return out;
}

/** LOG_REDACT_PATHS are the pino paths never written to logs. */
export const LOG_REDACT_PATHS = [
  'token',
  'secret',
  'password',
  '*.token',
  '*.secret',
  '*.password',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
];
