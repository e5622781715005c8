/** Options of every abort listener: it is needed once at most. */
const ONCE = Object.freeze({ once: true });

/**
 * One waiter's abort listener. It is a listener object (`handleEvent`), not a closure: a waiter
 * with a signal then costs one small object here, plus the map entry that finds it again.
 */
class AbortHook {
  constructor(
    readonly seq: number,
    readonly signal: AbortSignal,
    private readonly owner: AbortHooks,
  ) {}

  handleEvent(): void {
    this.owner.fire(this);
  }
}

/**
 * AbortHooks keeps the abort listeners of the waiters that came with a signal, by sequence
 * number, and removes each when its waiter leaves, so a long-lived signal does not keep waiters
 * that are long gone (nor call back for them).
 */
export class AbortHooks {
  private readonly hooks = new Map<number, AbortHook>();

  /** Creates the listeners' keeper; `onAbort(seq, signal)` is called when a waiter's signal fires. */
  constructor(private readonly onAbort: (seq: number, signal: AbortSignal) => void) {}

  /** add listens to `signal` for waiter `seq`, until it fires once or {@link remove}(seq). */
  add(seq: number, signal: AbortSignal): void {
    const hook = new AbortHook(seq, signal, this);
    signal.addEventListener('abort', hook, ONCE);
    this.hooks.set(seq, hook);
  }

  /** remove detaches waiter `seq`'s listener, if it has one. */
  remove(seq: number): void {
    const hook = this.hooks.get(seq);
    if (hook === undefined) return;
    this.hooks.delete(seq);
    hook.signal.removeEventListener('abort', hook);
  }

  /** fire is called by a hook whose signal fired. */
  fire(hook: AbortHook): void {
    if (this.hooks.get(hook.seq) !== hook) return;
    this.hooks.delete(hook.seq);
    this.onAbort(hook.seq, hook.signal);
  }
}
