import type { Algorithm } from '../core/algorithm.js';
import { FloodgateError } from '../core/errors.js';
import { policyIdOf, redisKeyOf } from '../stores/redis/key-layout.js';
import type { StoreShares } from '../stores/redis/redis-store.js';
import { replyError, textOf } from '../stores/redis/runner.js';
import { luaPolicyOf, type LuaScript } from '../stores/redis/scripts/index.js';
import { LEASE_SCRIPTS } from '../stores/redis/scripts/lease.js';
import type { LeaseAnswer, LeaseAsk, LeaseReturn, LeaseTerms } from './lease-ledger.js';
import type { LeaseSource } from './lease-source.js';

/**
 * RedisLeaseSource is the shared side of leases in Redis: each ask and return is one lease script
 * ({@link LEASE_SCRIPTS}) on the policy's state key and its ledger, in one hash slot, run through
 * the store's script runner (its deadline, circuits and observer) on the server's `TIME`.
 */
export class RedisLeaseSource implements LeaseSource {
  private readonly script: LuaScript;
  private readonly policyId: string;
  private readonly fixedArgs: readonly string[];
  private readonly paramArgs: readonly string[];
  private readonly registered: string;

  constructor(
    private readonly shares: StoreShares,
    policy: Algorithm,
    terms: LeaseTerms,
  ) {
    const lua = luaPolicyOf(policy);
    const script = LEASE_SCRIPTS[lua.module];
    if (script === undefined)
      throw new FloodgateError('INVALID_OPTION', `no lease script for ${JSON.stringify(policy.name)}`, 'lease.policy');
    this.script = script;
    this.registered = lua.registered;
    this.policyId = policyIdOf(policy);
    this.paramArgs = lua.params.map(String);
    this.fixedArgs = [terms.maxOutstanding, terms.leaseMs, terms.ratePerMs, terms.windowMs].map(String);
  }

  async ask(key: string, ask: LeaseAsk): Promise<LeaseAnswer> {
    const numbers = [ask.demand, ask.held, ask.wanted, ask.spend];
    const reply = await this.run('ask', key, ask.holder, numbers);
    const fields = Array.isArray(reply) && reply.length === 9 ? reply.map((v) => Number(textOf(v) ?? v)) : undefined;
    if (fields === undefined || fields.some((n) => Number.isNaN(n)) || (fields[0] !== 0 && fields[0] !== 1))
      throw replyError(
        `the ${this.script.name} script (ask)`,
        '[spent, remaining, retryAfterMs, resetMs, granted, durationMs, expiresAtMs, nextAskInMs, holders]',
        reply,
      );
    const [spent, remaining, retryAfterMs, resetMs, granted, durationMs, expiresAtMs, nextAskInMs, holders] =
      fields as [number, number, number, number, number, number, number, number, number];
    return {
      spent: spent === 1,
      remaining,
      retryAfterMs,
      resetMs,
      granted,
      durationMs,
      expiresAtMs,
      nextAskInMs,
      holders,
    };
  }

  async giveBack(key: string, back: LeaseReturn): Promise<number> {
    const numbers = [back.units, back.expiresAtMs, back.held, back.leaving ? 1 : 0];
    const reply = await this.run('return', key, back.holder, numbers);
    const given = Number(textOf(reply));
    if (Number.isNaN(given)) throw replyError(`the ${this.script.name} script (return)`, 'a number of units', reply);
    return given;
  }

  /** ledgerKeyOf returns the Redis key of `key`'s ledger, in the same slot as its state. */
  ledgerKeyOf(key: string): string {
    return `${this.shares.prefix}lease:${this.policyId}:{${key}}`;
  }

  private run(op: 'ask' | 'return', key: string, holder: string, numbers: readonly number[]): Promise<unknown> {
    const time = this.shares.testTime ? String(this.shares.clock.now()) : '';
    const args = [this.registered, op, time, holder, ...numbers.map(String), ...this.fixedArgs, ...this.paramArgs];
    const keys = [redisKeyOf(this.shares.prefix, this.policyId, key), this.ledgerKeyOf(key)];
    return this.shares.runner.run(this.script, keys, args, `lease-${op}`);
  }
}
