/**
 * The dashboard's "Overload protection" section: per route or upstream guard, its concurrency
 * limit and calls in flight over time, its latency, its sheds by reason and its circuit.
 */
import { legendItem, timeChart, type ChartLine } from './chart.js';
import { clockTime, count, esc, ms, rate, section } from './format.js';
import type { OverloadSample, OverloadScopeView, OverloadView } from './overload.js';
import { RECENT_SECONDS } from './overload.js';

/** The shed reasons in the order they are listed; any other reason follows them. */
const REASONS = ['limit', 'queue-full', 'queue-timeout', 'aborted', 'circuit-open'];

const COLORS = {
  limit: '#1565c0',
  inFlight: '#2e7d32',
  queued: '#ef6c00',
  sampleRtt: '#6a1b9a',
  baselineRtt: '#78909c',
} as const;
const STATE_COLORS: Readonly<Record<string, string>> = { closed: '#2e7d32', 'half-open': '#f9a825', open: '#c62828' };

/** renderOverload returns the section of every guard in `view` as it stood at `nowMs`. */
export function renderOverload(view: OverloadView, nowMs: number): string {
  if (view.scopes.length === 0)
    return section(
      'overload',
      'Overload protection',
      '<p class="note">No route or upstream has a <code>concurrency</code>, <code>adaptive</code> or <code>circuitBreaker</code> section.</p>',
    );
  const note = `<p class="note">Per route and upstream guard: one sample a second over the last ${view.windowSeconds} s. Sheds per second are over the last ${RECENT_SECONDS} samples.</p>`;
  return section(
    'overload',
    'Overload protection',
    `${note}<div class="cards">${view.scopes.map((s) => scopeCard(s, view.windowSeconds, nowMs)).join('\n')}</div>`,
  );
}

function scopeCard(s: OverloadScopeView, windowSeconds: number, nowMs: number): string {
  const fromMs = nowMs - windowSeconds * 1000;
  const parts = [`<h3>${esc(s.scope)}</h3>`];
  if (s.now !== undefined) parts.push(figures(s), concurrencyChart(s.samples, s.scope, fromMs, nowMs));
  if (s.now?.adaptive !== undefined) parts.push(latencyChart(s.samples, s.scope, fromMs, nowMs));
  parts.push(sheds(s, windowSeconds));
  if (s.circuit !== undefined) parts.push(circuit(s, fromMs, nowMs));
  return `<div class="card overload-scope" data-scope="${esc(s.scope)}">${parts.join('\n')}</div>`;
}

function figures(s: OverloadScopeView): string {
  const n = s.now!;
  const a = n.adaptive;
  const latency =
    a === undefined
      ? 'a fixed limit: no latency estimate'
      : `latency <b class="sample-rtt">${ms(a.sampleRttMs)}</b> ms, baseline <b class="baseline-rtt">${ms(a.baselineRttMs)}</b> ms${a.probing ? ' · <span class="probing">probing the baseline</span>' : ''}`;
  return `<p class="figures">limit <b class="limit">${count(n.limit)}</b> · in flight <b class="in-flight">${count(n.inFlight)}</b> · queued <b class="queued">${count(n.queued)}</b> · ${latency}</p>`;
}

function concurrencyChart(samples: readonly OverloadSample[], scope: string, fromMs: number, nowMs: number): string {
  // The limit is drawn last and dashed: at saturation it lies on the in-flight line, and both stay visible.
  const lines: ChartLine[] = [
    { name: 'in-flight', color: COLORS.inFlight, points: samples.map((p) => [p.atMs, p.inFlight]) },
    { name: 'queued', color: COLORS.queued, points: samples.map((p) => [p.atMs, p.queued]) },
    { name: 'limit', color: COLORS.limit, points: samples.map((p) => [p.atMs, p.limit]), dashed: true },
  ];
  const chart = timeChart({
    lines,
    fromMs,
    toMs: nowMs,
    unit: '',
    label: `${scope}: limit, in flight and queued per second`,
    className: 'concurrency',
  });
  const legend = [
    legendItem(lines[2]!, 'limit'),
    legendItem(lines[0]!, 'in flight'),
    legendItem(lines[1]!, 'queued'),
  ].join(' ');
  return `<figure>${chart}<figcaption>${legend}</figcaption></figure>`;
}

function latencyChart(samples: readonly OverloadSample[], scope: string, fromMs: number, nowMs: number): string {
  const lines: ChartLine[] = [
    { name: 'sample-rtt', color: COLORS.sampleRtt, points: samples.map((p) => [p.atMs, p.sampleRttMs]) },
    {
      name: 'baseline-rtt',
      color: COLORS.baselineRtt,
      points: samples.map((p) => [p.atMs, p.baselineRttMs]),
      dashed: true,
    },
  ];
  const chart = timeChart({
    lines,
    fromMs,
    toMs: nowMs,
    unit: ' ms',
    label: `${scope}: the adaptive limit's latency estimates, in ms`,
    className: 'latency',
  });
  const legend = [
    legendItem(lines[0]!, 'latency (window median)'),
    legendItem(lines[1]!, 'baseline (no queueing)'),
  ].join(' ');
  return `<figure>${chart}<figcaption>${legend}</figcaption></figure>`;
}

function sheds(s: OverloadScopeView, windowSeconds: number): string {
  const reasons = [
    ...REASONS.filter((r) => s.shedInWindow[r] !== undefined),
    ...Object.keys(s.shedInWindow)
      .filter((r) => !REASONS.includes(r))
      .sort(),
  ];
  if (reasons.length === 0) return `<p class="note sheds">No request shed in the last ${windowSeconds} s.</p>`;
  const rows = reasons.map(
    (r) =>
      `<tr data-reason="${esc(r)}"><td>${esc(r)}</td><td class="num shed-rate">${rate(s.shedPerSecond[r] ?? 0)}</td><td class="num shed-window">${count(s.shedInWindow[r]!)}</td></tr>`,
  );
  return `<table class="sheds"><caption>Shed requests by reason</caption><thead><tr><th>reason</th><th class="num">/s</th><th class="num">last ${windowSeconds} s</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function circuit(s: OverloadScopeView, fromMs: number, nowMs: number): string {
  const c = s.circuit!;
  const retry = c.state === 'closed' ? '' : ` · retry in <b class="retry-in">${count(c.retryInMs)}</b> ms`;
  const head = `<p class="circuit">circuit <span class="circuit-state state-${esc(c.state)}">${esc(c.state)}</span>${retry}</p>`;
  const rows = c.transitions.map(
    (t) =>
      `<tr><td><time>${clockTime(t.atMs)}</time></td><td>${esc(t.from)} → ${esc(t.to)}</td><td>${t.reason === undefined ? '<span class="note">not reported</span>' : esc(t.reason)}</td></tr>`,
  );
  const table =
    rows.length === 0
      ? '<p class="note">No change of state since the gateway started.</p>'
      : `<table class="transitions"><caption>Latest changes (UTC)</caption><thead><tr><th>time</th><th>change</th><th>reason</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
  return `${head}${stateStrip(s.samples, s.scope, fromMs, nowMs)}${table}`;
}

/** A strip of the circuit's state at each sample: green closed, amber half-open, red open. */
function stateStrip(samples: readonly OverloadSample[], scope: string, fromMs: number, nowMs: number): string {
  const width = 420;
  const left = 38;
  const plotW = width - left - 8;
  const spanMs = Math.max(1, nowMs - fromMs);
  const cellW = Math.max(1, (plotW * 1000) / spanMs);
  const cells = samples
    .filter((p) => p.circuit !== undefined)
    .map((p) => {
      const x = left + ((p.atMs - fromMs) / spanMs) * plotW - cellW;
      // Half a pixel wider than a second, so that neighbouring seconds meet without a hairline between them.
      return `<rect x="${Math.max(left, x).toFixed(1)}" y="2" width="${(cellW + 0.5).toFixed(1)}" height="10" fill="${STATE_COLORS[p.circuit!] ?? '#9e9e9e'}"/>`;
    });
  return `<svg class="circuit-strip" width="${width}" height="14" viewBox="0 0 ${width} 14" shape-rendering="crispEdges" role="img" aria-label="${esc(scope)}: circuit state per second"><rect x="${left}" y="2" width="${plotW}" height="10" fill="#f6f8fa"/><text x="${left - 4}" y="11" text-anchor="end" font-size="10" fill="#5f6b76" font-family="system-ui, sans-serif">state</text>${cells.join('')}</svg>`;
}
