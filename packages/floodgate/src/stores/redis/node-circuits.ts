/** One circuit breaker per Redis Cluster node. */
import { hashSlotOf } from './key-layout.js';
import { Circuit, type CircuitOptions, type CircuitRouter } from './circuit.js';

/** NodeCircuitsOptions configures {@link NodeCircuits}: every circuit's options, and how to find nodes. */
export interface NodeCircuitsOptions extends CircuitOptions {
  /** The id of the master serving a slot, or undefined when unknown: the adapter's `nodeOf` (see `RedisAdapter`). */
  readonly nodeOf?: (slot: number) => string | undefined;
  /** Most node circuits kept before idle ones are forgotten (default 1024); at least 1. */
  readonly maxNodes?: number;
}

/** Slots per circuit when the node of a slot is unknown: 2^10, so 16 groups of 1024 slots. */
const GROUP_BITS = 10;

/**
 * NodeCircuits keeps one {@link Circuit} per Redis Cluster master, so a master that is down or
 * hung only fails the keys whose slots it serves: every other key keeps being sent and decided by
 * Redis. A script goes through the circuit of the master `nodeOf` names for its first key's slot
 * (all of a script's keys share a slot on a cluster).
 *
 * After a failover the slots' master has another id, so the new master starts with a fresh,
 * closed circuit. Circuits are kept in a map of at most `maxNodes` ids; when a new id would pass
 * that, the idle circuits (see {@link Circuit.idle}: closed, or due for a probe) are forgotten,
 * and then the oldest if none was idle. A forgotten circuit is made again, closed, on next use.
 *
 * When the node of a slot is unknown (no `nodeOf`, or the client has no slot map yet), the slot
 * shares a circuit with its group of 1024 slots (16 groups): at most 16 such circuits, and since
 * a cluster's masters serve ranges of slots, a dead master usually fails only the groups it
 * serves, with no worse isolation than one circuit for the whole cluster.
 */
export class NodeCircuits implements CircuitRouter {
  private readonly nodes = new Map<string, Circuit>();
  private readonly groups: Circuit[] = [];
  private readonly maxNodes: number;

  /** Creates the router; no circuit exists until a script needs it. */
  constructor(private readonly options: NodeCircuitsOptions) {
    this.maxNodes = Math.max(1, options.maxNodes ?? 1024);
  }

  /** size returns how many circuits exist now: one per node seen (at most `maxNodes`), plus slot groups. */
  get size(): number {
    return this.nodes.size + this.groups.reduce((count) => count + 1, 0); // reduce skips the groups never made
  }

  /** circuitOf returns the circuit of the master serving the slot of `keys[0]` (its slot group's when unknown). */
  circuitOf(keys: readonly string[]): Circuit {
    const key = keys[0];
    const slot = key === undefined ? 0 : hashSlotOf(key);
    const node = this.options.nodeOf?.(slot);
    return node === undefined ? this.groupOf(slot) : this.nodeCircuit(node);
  }

  /** retryInMs returns how long until the circuit guarding `redisKey` lets a probe through, in whole ms (0 when closed, due, or not made yet). */
  retryInMs(redisKey: string): number {
    const slot = hashSlotOf(redisKey);
    const node = this.options.nodeOf?.(slot);
    const circuit = node === undefined ? this.groups[slot >> GROUP_BITS] : this.nodes.get(node);
    return circuit === undefined ? 0 : circuit.retryInMs();
  }

  private nodeCircuit(node: string): Circuit {
    let circuit = this.nodes.get(node);
    if (circuit === undefined) {
      if (this.nodes.size >= this.maxNodes) this.prune();
      circuit = new Circuit(this.options, `Redis node ${node}`, node);
      this.nodes.set(node, circuit);
    }
    return circuit;
  }

  private groupOf(slot: number): Circuit {
    const group = slot >> GROUP_BITS;
    let circuit = this.groups[group];
    if (circuit === undefined) {
      const first = group << GROUP_BITS;
      const slots = `slots ${first}-${first + (1 << GROUP_BITS) - 1}`;
      circuit = new Circuit(this.options, `Redis for ${slots} (node unknown)`, slots);
      this.groups[group] = circuit;
    }
    return circuit;
  }

  /** Makes room for one node: forgets the idle circuits, else the oldest one. */
  private prune(): void {
    for (const [node, circuit] of this.nodes) {
      if (circuit.idle) this.nodes.delete(node);
    }
    const oldest = this.nodes.keys().next();
    if (this.nodes.size >= this.maxNodes && oldest.done !== true) this.nodes.delete(oldest.value);
  }
}
