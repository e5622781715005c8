/**
 * NodeRouter hands requests out to a fleet's live nodes in proportion to their weights, by smooth
 * weighted round robin (nginx's upstream balancing): deterministic, evenly interleaved, and with
 * equal weights request i goes to node `i % nodes`, as the per-request fleet hands them out. A
 * dead node takes no more; when every live node has weight 0, the live nodes share equally.
 */
export class NodeRouter {
  private readonly current: Float64Array;
  private readonly live: boolean[];

  /** Creates a router over `weights.length` nodes, all alive. */
  constructor(private readonly weights: readonly number[]) {
    this.current = new Float64Array(weights.length);
    this.live = weights.map(() => true);
  }

  /** next returns the node the next request goes to. */
  next(): number {
    const weighted = this.weights.some((w, i) => w > 0 && this.live[i]);
    let total = 0;
    let best = -1;
    for (let i = 0; i < this.weights.length; i++) {
      if (!this.live[i]) continue;
      const w = weighted ? this.weights[i]! : 1;
      if (w === 0) continue;
      this.current[i]! += w;
      total += w;
      if (best < 0 || this.current[i]! > this.current[best]!) best = i;
    }
    this.current[best]! -= total;
    return best;
  }

  /** kill takes `node` out of the rotation for good. */
  kill(node: number): void {
    this.live[node] = false;
    this.current[node] = 0;
  }
}
