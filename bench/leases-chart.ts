/**
 * The lease benchmark's curve as plain SVG, in the overload charts' style (bench/overload/charts.ts):
 * over-admission (% of the limit, y) against Redis scripts per admitted request (x, log scale), a
 * line per number of nodes through its maxOutstandingShare settings, and each line's per-request
 * figure marked on the x axis.
 */

/** CurvePoint is one lease setting's run. */
export interface CurvePoint {
  readonly share: number;
  readonly scriptsPerAdmitted: number;
  readonly overPercent: number;
}

/** CurveLine is one fleet size: its lease settings, and the per-request peer's scripts per admitted request. */
export interface CurveLine {
  readonly label: string;
  readonly perRequest: number;
  readonly points: readonly CurvePoint[];
}

/** Okabe-Ito colours, readable with colour blindness. */
const COLORS = ['#0072b2', '#e69f00', '#009e73', '#d55e00'];
const W = 820;
const H = 440;
const P = { left: 70, right: 560, top: 50, bottom: 360 };
const f = (x: number): string => (Math.round(x * 100) / 100).toString();
const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** leasesCurveSvg returns an SVG document of `lines`, titled `title`. */
export function leasesCurveSvg(lines: readonly CurveLine[], title: string): string {
  const xs = lines.flatMap((l) => [l.perRequest, ...l.points.map((p) => p.scriptsPerAdmitted)]).filter((v) => v > 0);
  const lo = Math.floor(Math.log10(Math.min(...xs)));
  const hi = Math.ceil(Math.log10(Math.max(...xs)));
  const yMax = Math.max(2.5, Math.ceil(Math.max(...lines.flatMap((l) => l.points.map((p) => p.overPercent))) + 0.5));
  const x = (v: number): number => P.left + ((Math.log10(Math.max(v, 10 ** lo)) - lo) / (hi - lo)) * (P.right - P.left);
  const y = (v: number): number => P.bottom - (Math.min(Math.max(v, 0), yMax) / yMax) * (P.bottom - P.top);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(title)}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="${P.left}" y="26" font-size="14" font-weight="bold" fill="#222">${esc(title)}</text>`,
  ];
  const yStep = yMax <= 5 ? 0.5 : Math.ceil(yMax / 10);
  for (let v = 0; v <= yMax + 1e-9; v += yStep) {
    parts.push(
      `<line x1="${P.left}" x2="${P.right}" y1="${f(y(v))}" y2="${f(y(v))}" stroke="#ececec"/>`,
      `<text x="${P.left - 8}" y="${f(y(v) + 4)}" text-anchor="end" fill="#333">${f(v)}%</text>`,
    );
  }
  for (let e = lo; e <= hi; e++) {
    parts.push(
      `<line x1="${f(x(10 ** e))}" x2="${f(x(10 ** e))}" y1="${P.top}" y2="${P.bottom + 6}" stroke="#ececec"/>`,
      `<text x="${f(x(10 ** e))}" y="${P.bottom + 20}" text-anchor="middle" fill="#333">${10 ** e >= 1 ? 10 ** e : (10 ** e).toFixed(-e)}</text>`,
    );
  }
  parts.push(
    `<line x1="${P.left}" x2="${P.right}" y1="${P.bottom}" y2="${P.bottom}" stroke="#333"/>`,
    `<line x1="${P.left}" x2="${P.left}" y1="${P.top}" y2="${P.bottom}" stroke="#333"/>`,
    `<line x1="${P.left}" x2="${P.right}" y1="${f(y(2))}" y2="${f(y(2))}" stroke="#b0b0b0" stroke-dasharray="6 4"/>`,
    `<text x="${(P.left + P.right) / 2}" y="${P.bottom + 42}" text-anchor="middle" fill="#222">Redis scripts per admitted request (log scale)</text>`,
    `<text x="18" y="${(P.top + P.bottom) / 2}" text-anchor="middle" fill="#222" transform="rotate(-90 18 ${(P.top + P.bottom) / 2})">over-admission, % of the limit</text>`,
  );
  lines.forEach((line, i) => {
    const color = COLORS[i % COLORS.length]!;
    const pts = [...line.points].sort((a, b) => a.share - b.share);
    parts.push(
      `<g data-line="${esc(line.label)}"><path d="${pts.map((p, j) => `${j === 0 ? 'M' : 'L'}${f(x(p.scriptsPerAdmitted))} ${f(y(p.overPercent))}`).join(' ')}" fill="none" stroke="${color}" stroke-width="2.5"/>`,
    );
    for (const p of pts) {
      parts.push(
        `<circle cx="${f(x(p.scriptsPerAdmitted))}" cy="${f(y(p.overPercent))}" r="3.5" fill="${color}"/>`,
        `<text x="${f(x(p.scriptsPerAdmitted) + 5)}" y="${f(y(p.overPercent) - 6)}" fill="${color}" font-size="10">${p.share}</text>`,
      );
    }
    parts.push(
      `<path d="M${f(x(line.perRequest))} ${P.bottom} l-5 -10 l10 0 z" fill="${color}"/>`,
      `</g>`,
      `<rect x="${P.right + 20}" y="${P.top + i * 22}" width="14" height="14" fill="${color}"/><text x="${P.right + 40}" y="${P.top + i * 22 + 11}" fill="#222">${esc(line.label)}</text>`,
    );
  });
  const note = P.top + lines.length * 22 + 10;
  parts.push(
    `<text x="${P.right + 20}" y="${note}" fill="#555">labels: maxOutstandingShare</text>`,
    `<text x="${P.right + 20}" y="${note + 18}" fill="#555">triangles: per-request decisions</text>`,
    `<line x1="${P.right + 20}" x2="${P.right + 34}" y1="${note + 32}" y2="${note + 32}" stroke="#b0b0b0" stroke-dasharray="6 4"/><text x="${P.right + 40}" y="${note + 36}" fill="#555">2% of the limit</text>`,
    '</svg>',
  );
  return parts.join('\n') + '\n';
}
