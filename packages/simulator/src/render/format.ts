/** formatNumber returns `value` rounded to at most `digits` decimals (default 3), without trailing zeros: stable text for reports. */
export function formatNumber(value: number, digits = 3): string {
  if (!Number.isFinite(value)) return Number.isNaN(value) ? 'n/a' : value > 0 ? 'Infinity' : '-Infinity';
  const rounded = Number(value.toFixed(digits));
  return String(Object.is(rounded, -0) ? 0 : rounded);
}

/** escapeXml returns `text` safe inside XML or HTML text and attribute values. */
export function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** PALETTE holds the series colours, in the order lanes take them (colour-blind-friendly first). */
export const PALETTE = [
  '#0072b2',
  '#d55e00',
  '#009e73',
  '#cc79a7',
  '#e69f00',
  '#56b4e9',
  '#7f3c8d',
  '#3b3b3b',
  '#a6761d',
  '#1b9e77',
] as const;

/** colorOf returns the colour of the lane at `index`. */
export function colorOf(index: number): string {
  return PALETTE[index % PALETTE.length]!;
}

/**
 * niceTicks returns evenly spaced round tick values (steps of 1, 2 or 5 times a power of ten)
 * covering [0, max], about `count` of them; the last tick is at or above `max`.
 */
export function niceTicks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power;
  const ticks: number[] = [];
  for (let i = 0; ; i++) {
    const value = Number((i * step).toPrecision(12));
    ticks.push(value);
    if (value >= max) break;
  }
  return ticks;
}

/** clipText returns `text` cut to `length` characters, ending in an ellipsis when cut: a legend entry's room. */
export function clipText(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}
