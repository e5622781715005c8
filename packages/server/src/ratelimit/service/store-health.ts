/**
 * Whether the rate limit service is serving, as its store comes and goes: the store's circuits
 * followed, and the rule that says when a store that is away makes the service NOT_SERVING. The
 * same for `floodgate ratelimit` and the service inside `floodgate serve`.
 */
import type { Observer } from 'floodgate';

/** HealthPolicy says when the service reports NOT_SERVING because its store is away (`--health-follows-store`, `rateLimitService.healthFollowsStore`). */
export type HealthPolicy = 'auto' | 'always' | 'never';

/** HEALTH_POLICIES are every {@link HealthPolicy}. */
export const HEALTH_POLICIES: readonly HealthPolicy[] = ['auto', 'always', 'never'];

/**
 * servingWhen returns whether the service is serving with the store `up` or not: `never` ignores
 * the store, `always` follows it (envoyproxy/ratelimit's `REDIS_HEALTH_CHECK_ACTIVE_CONNECTION`),
 * `auto` follows it only when a store that is away fails the decisions (`decisionsFail`: the
 * service's `--on-store-error throw`, the gateway store's `onError: fail-closed`).
 */
export function servingWhen(up: boolean, policy: HealthPolicy, decisionsFail: boolean): boolean {
  if (up || policy === 'never') return true;
  return policy === 'auto' && !decisionsFail;
}

/**
 * StoreState follows the store's circuits (one per node on a cluster): the store is up while none
 * is open or probing, and `onChange` hears each change.
 */
export class StoreState {
  private readonly away = new Set<string>();

  constructor(private readonly onChange: (up: boolean) => void) {}

  /** observer returns the observer that feeds it, for the store's options. */
  get observer(): Observer {
    return {
      circuit: (e) => {
        const before = this.up;
        if (e.state === 'closed') this.away.delete(e.node ?? '');
        else this.away.add(e.node ?? '');
        if (this.up !== before) this.onChange(this.up);
      },
    };
  }

  /** up is true while every circuit is closed. */
  get up(): boolean {
    return this.away.size === 0;
  }
}
