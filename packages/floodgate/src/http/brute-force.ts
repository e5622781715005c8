/**
 * Brute-force protection: count failures (wrong passwords, bad tokens) per subject, block a
 * subject for a duration once it fails too often, and block it longer each time it comes back.
 * Built from {@link Limiter}s, so it runs on the memory store or on Redis shared by every process.
 */
import type { Clock } from '../core/clock.js';
import { FloodgateError, describeValue } from '../core/errors.js';
import { tokenBucket } from '../core/algorithms/token-bucket.js';
import { Limiter } from '../limiter.js';
import type { Store } from '../stores/store.js';

/** BruteForceRule is one subject failures are counted against, such as the IP, or the user at an IP. */
export interface BruteForceRule<S> {
  /** The rule's name, in store keys and answers: 1-64 of `A-Z a-z 0-9 _ . -`, unique. */
  name: string;
  /** The subject's key under this rule (`attempt.ip`, `${attempt.user}@${attempt.ip}`); undefined: the rule does not apply. */
  key: (attempt: S) => string | undefined;
  /** The failure that blocks: the `maxFailures`-th within the window (a whole number from 1). */
  maxFailures: number;
  /** Failures are forgotten at `maxFailures` per `windowMs`, continuously. */
  windowMs: number;
  /**
   * How long a block lasts; a list escalates: the first block lasts `blockMs[0]`, the next (while
   * earlier blocks are remembered) `blockMs[1]`, and so on, the last repeating.
   */
  blockMs: number | readonly number[];
  /** How long past blocks count toward escalation (default ten times the longest block). */
  forgetBlocksMs?: number;
  /** A success clears this rule's failure count: blocks follow consecutive failures only (default false). */
  resetOnSuccess?: boolean;
}

/** BruteForceGuardOptions configures {@link bruteForceGuard}. */
export interface BruteForceGuardOptions<S> {
  rules: readonly BruteForceRule<S>[];
  /** Where counts and blocks live (default: each rule's own memory store); a `RedisStore` shares them. */
  store?: Store;
  /** The clock of the limiters (default the system clock); tests pass a `ManualClock`. */
  clock?: Clock;
}

/** GuardAnswer says whether an attempt may go ahead. */
export interface GuardAnswer {
  readonly allowed: boolean;
  /** 0 when allowed; else how long until the longest block ends. */
  readonly retryAfterMs: number;
  /** The names of the rules whose block refuses the attempt. */
  readonly blockedBy: readonly string[];
}

/** The limiters of one rule: its failures, its blocks remembered for escalation, and one block per level. */
interface RuleState<S> {
  readonly rule: BruteForceRule<S>;
  readonly failures: Limiter;
  readonly strikes: Limiter;
  readonly blocks: readonly Limiter[];
}

/**
 * BruteForceGuard answers, per attempt, whether it is blocked ({@link check}), and learns from how
 * attempts end ({@link failed}, {@link succeeded}).
 */
export class BruteForceGuard<S> {
  private readonly states: readonly RuleState<S>[];

  constructor(options: BruteForceGuardOptions<S>) {
    if (
      typeof options !== 'object' ||
      options === null ||
      !Array.isArray(options.rules) ||
      options.rules.length === 0
    ) {
      throw new FloodgateError(
        'INVALID_OPTION',
        `bruteForceGuard needs rules: a non-empty array, got ${describeValue((options as { rules?: unknown } | null)?.rules)}`,
        'rules',
      );
    }
    const names = new Set<string>();
    this.states = options.rules.map((rule, i) => stateOf(checkRule(rule, i, names), options));
  }

  /** check returns whether `attempt` may go ahead: refused while any rule's block on it lasts. */
  async check(attempt: S): Promise<GuardAnswer> {
    const blocked = await Promise.all(
      this.states.map(async (s) => [s.rule.name, await blockedFor(s, keyOf(s, attempt))] as const),
    );
    return answerOf(blocked);
  }

  /**
   * failed records a failed attempt under every rule that applies; a rule whose count reaches
   * `maxFailures` blocks the subject (escalating) and starts counting afresh. Returns
   * {@link check}'s answer afterwards.
   */
  async failed(attempt: S): Promise<GuardAnswer> {
    await Promise.all(this.states.map((s) => recordFailure(s, keyOf(s, attempt))));
    return this.check(attempt);
  }

  /** succeeded clears the failure count of the rules with `resetOnSuccess` (blocks and escalation stay). */
  async succeeded(attempt: S): Promise<void> {
    await Promise.all(
      this.states
        .filter((s) => s.rule.resetOnSuccess === true)
        .map((s) => {
          const key = keyOf(s, attempt);
          return key === undefined ? undefined : s.failures.reset(`f:${key}`);
        }),
    );
  }
}

/**
 * bruteForceGuard returns a {@link BruteForceGuard} over `rules`: rate-limiter-flexible's
 * login-protection recipe is a slow rule per IP and a consecutive-failures rule per user and IP.
 *
 * @example
 * const guard = bruteForceGuard<{ ip: string; user: string }>({
 *   rules: [
 *     { name: 'ip', key: (a) => a.ip, maxFailures: 100, windowMs: 86_400_000, blockMs: 86_400_000 },
 *     { name: 'user-ip', key: (a) => `${a.user}@${a.ip}`, maxFailures: 5, windowMs: 3_600_000, blockMs: [60_000, 600_000, 3_600_000], resetOnSuccess: true },
 *   ],
 * });
 * if (!(await guard.check(attempt)).allowed) return tooMany();
 * if (await passwordOk(attempt)) await guard.succeeded(attempt); else await guard.failed(attempt);
 */
export function bruteForceGuard<S>(options: BruteForceGuardOptions<S>): BruteForceGuard<S> {
  return new BruteForceGuard(options);
}

function keyOf<S>(s: RuleState<S>, attempt: S): string | undefined {
  const key = s.rule.key(attempt);
  if (key !== undefined && typeof key !== 'string') {
    throw new FloodgateError(
      'INVALID_OPTION',
      `rule "${s.rule.name}": key must return a string or undefined, got ${describeValue(key)}`,
      `${s.rule.name}.key`,
    );
  }
  return key === undefined ? undefined : `bf:${s.rule.name}:${key}`;
}

async function blockedFor<S>(s: RuleState<S>, key: string | undefined): Promise<number> {
  if (key === undefined) return 0;
  const looks = await Promise.all(s.blocks.map((b, i) => b.peek(`b${i}:${key}`)));
  return Math.max(0, ...looks.map((d) => (d.allowed ? 0 : d.retryAfterMs)));
}

async function recordFailure<S>(s: RuleState<S>, key: string | undefined): Promise<void> {
  if (key === undefined) return;
  const d = await s.failures.consume(`f:${key}`);
  if (d.allowed && d.remaining > 0) return;
  // The maxFailures-th failure: block at the next level, and count afresh once the block ends.
  const strike = await s.strikes.consume(`s:${key}`);
  const level =
    Math.min(Math.max(strike.allowed ? s.blocks.length - strike.remaining : s.blocks.length, 1), s.blocks.length) - 1;
  await s.blocks[level]!.consume(`b${level}:${key}`);
  await s.failures.reset(`f:${key}`);
}

function answerOf(blocked: readonly (readonly [string, number])[]): GuardAnswer {
  const by = blocked.filter(([, ms]) => ms > 0);
  const retryAfterMs = Math.max(0, ...by.map(([, ms]) => ms));
  return { allowed: by.length === 0, retryAfterMs, blockedBy: by.map(([name]) => name) };
}

function stateOf<S>(rule: BruteForceRule<S>, options: BruteForceGuardOptions<S>): RuleState<S> {
  const blockMs = typeof rule.blockMs === 'number' ? [rule.blockMs] : rule.blockMs;
  const forgetMs = rule.forgetBlocksMs ?? 10 * Math.max(...blockMs);
  const make = (capacity: number, perMs: number, part: string): Limiter =>
    new Limiter({
      policy: tokenBucket({ capacity, refillPerSecond: (capacity * 1000) / perMs }),
      name: `brute-force.${rule.name}.${part}`,
      ...(options.store ? { store: options.store } : {}),
      ...(options.clock ? { clock: options.clock } : {}),
    });
  return {
    rule,
    failures: make(rule.maxFailures, rule.windowMs, 'failures'),
    strikes: make(blockMs.length, forgetMs, 'strikes'),
    // Keys carry the part (`f:`, `s:`, `b0:`...): limiters with equal policies may share a store's table.
    // A bucket of one token, refilled in exactly the block's time: taking it blocks for that long.
    blocks: blockMs.map((ms, i) => make(1, ms, `block${i}`)),
  };
}

function checkRule<S>(rule: BruteForceRule<S>, i: number, names: Set<string>): BruteForceRule<S> {
  const at = `rules[${i}]`;
  if (typeof rule !== 'object' || rule === null) throw invalid(at, 'an object', rule);
  if (typeof rule.name !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(rule.name) || names.has(rule.name))
    throw invalid(`${at}.name`, 'a unique name of 1-64 of A-Z a-z 0-9 _ . -', rule.name);
  names.add(rule.name);
  if (typeof rule.key !== 'function') throw invalid(`${at}.key`, 'a function from the attempt to a key', rule.key);
  if (!Number.isSafeInteger(rule.maxFailures) || rule.maxFailures < 1)
    throw invalid(`${at}.maxFailures`, 'a whole number from 1', rule.maxFailures);
  if (!positive(rule.windowMs))
    throw invalid(`${at}.windowMs`, 'a finite number of milliseconds above 0', rule.windowMs);
  const blocks = typeof rule.blockMs === 'number' ? [rule.blockMs] : rule.blockMs;
  if (!Array.isArray(blocks) || blocks.length === 0 || !blocks.every(positive))
    throw invalid(`${at}.blockMs`, 'milliseconds above 0, or a non-empty list of them', rule.blockMs);
  if (rule.forgetBlocksMs !== undefined && !positive(rule.forgetBlocksMs))
    throw invalid(`${at}.forgetBlocksMs`, 'a finite number of milliseconds above 0', rule.forgetBlocksMs);
  return rule;
}

function positive(value: unknown): boolean {
  return typeof value === 'number' && value > 0 && value < Infinity;
}

function invalid(option: string, expected: string, got: unknown): FloodgateError {
  return new FloodgateError(
    'INVALID_OPTION',
    `bruteForceGuard ${option} must be ${expected}, got ${describeValue(got)}`,
    option,
  );
}
