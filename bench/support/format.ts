/** Plain-text tables and number formats for the report. */

/** table lays out rows under a header, left-aligning columns whose header starts a line of text. */
export function table(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  rightAligned: ReadonlySet<number>,
): string {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, c) => (rightAligned.has(c) ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** mps formats operations per second as millions per second. */
export function mps(opsPerSec: number): string {
  return (opsPerSec / 1e6).toFixed(opsPerSec >= 1e7 ? 1 : 2);
}

/** ratio formats a ratio, or a dash when it cannot be computed. */
export function ratio(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value) ? '—' : `${value.toFixed(2)}×`;
}

/** spread formats half the min–max range of the rounds, relative to the median. */
export function spread(min: number, max: number, median: number): string {
  return median > 0 ? `±${(((max - min) / 2 / median) * 100).toFixed(0)}%` : '';
}

/** bytes formats a per-key size. */
export function bytes(value: number | undefined): string {
  return value === undefined ? '' : value.toFixed(1);
}

/** count formats an integer with thousands separators. */
export function count(n: number): string {
  return n.toLocaleString('en-US');
}
