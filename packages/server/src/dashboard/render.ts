/**
 * The dashboard's HTML, rendered on the server from a snapshot: every number is in the markup, so
 * the page reads without JavaScript; the live updates send the same fragments again.
 */
import { clockTime, count, esc, ms, rate, section } from './format.js';
import { renderOverload } from './render-overload.js';
import type { DashboardView, RuleView } from './view.js';

export { esc } from './format.js';

/** renderLive returns the live part of the page (everything but the config): the fragment each update replaces. */
export function renderLive(view: DashboardView): string {
  return [
    summary(view),
    fleet(view),
    rulesTable(view),
    upstreams(view),
    service(view),
    renderOverload(view.overload, view.atMs),
    topKeys(view),
    refusals(view),
    store(view),
  ].join('\n');
}

function summary(view: DashboardView): string {
  const uptimeS = Math.max(0, Math.round((view.atMs - view.startedAtMs) / 1000));
  const status = view.ready ? '<span class="ok">ready</span>' : '<span class="bad">not ready</span>';
  const p = view.process;
  const ports = `port ${p.port ?? '–'}, admin ${p.adminPort ?? '–'}`;
  const process = `<span id="process" data-host="${esc(p.host)}" data-pid="${p.pid}">${esc(p.host)} pid ${p.pid} (${ports})</span>`;
  const shared =
    view.store.kind === 'memory'
      ? ''
      : ' · the counts below are this process&#39;s decisions; every process on the store is listed under Gateway processes';
  return `<p class="summary" id="summary">Gateway ${process} ${status}${shared} · snapshot at <time id="snapshot-at" data-ms="${view.atMs}">${clockTime(view.atMs)} UTC</time> · up ${count(uptimeS)} s · config loaded ${esc(view.config.loadedAt)}</p>`;
}

/** Every gateway process on the store, a row per process and rule: what each published of itself lately. */
function fleet(view: DashboardView): string {
  const f = view.fleet;
  if (f === undefined) return '';
  const rows = f.processes.flatMap((p) => {
    const name = `${esc(p.host)} pid ${p.pid}${p.self ? ' (this one)' : ''}`;
    const where = `port ${p.port ?? '–'}, admin ${p.adminPort ?? '–'}`;
    const state = `${p.ready ? '<span class="ok">ready</span>' : '<span class="bad">not ready</span>'}, ${(p.ageMs / 1000).toFixed(1)} s ago`;
    const rules = p.rules.length === 0 ? [undefined] : p.rules;
    return rules.map(
      (r, i) =>
        `<tr data-pid="${p.pid}" data-host="${esc(p.host)}"${p.self ? ' class="self"' : ''}>${i === 0 ? `<td rowspan="${rules.length}">${name}<br><small>${where}; ${state}</small></td>` : ''}${r === undefined ? '<td colspan="6">no rules</td>' : `<td>${esc(r.route)} / ${esc(r.rule)}</td><td class="num admitted">${rate(r.admitted)}</td><td class="num limited">${rate(r.limited)}</td><td class="num would-refuse">${rate(r.wouldRefuse)}</td><td class="num degraded">${rate(r.degraded)}</td><td class="num queued">${count(r.queued)}</td>`}</tr>`,
    );
  });
  const head =
    '<tr><th>process</th><th>route / rule</th><th class="num">admitted /s</th><th class="num">limited /s</th><th class="num">would refuse /s</th><th class="num">degraded /s</th><th class="num">queued</th></tr>';
  const error =
    f.error === undefined ? '' : `<p class="bad">The store did not answer the latest round: ${esc(f.error)}</p>`;
  return section(
    'fleet',
    `Gateway processes on this store (${f.processes.length})`,
    `<p class="note">Each process writes its own figures to the store once a second and reads the others'; rates per second over each one's last 10 s. A process silent for 10 s is no longer listed. Each has its own dashboard on its admin port for the rest.</p>${error}<div class="scroll"><table><thead>${head}</thead><tbody>${rows.join('')}</tbody></table></div>`,
  );
}

/** The rate columns: each group of outcomes (see RATE_GROUPS) and its heading. */
const GROUPS = [
  ['admitted', 'admitted'],
  ['limited', 'limited'],
  ['wouldAdmit', 'shadow: would admit'],
  ['wouldRefuse', 'shadow: would refuse'],
  ['degraded', 'degraded'],
] as const;

function rulesTable(view: DashboardView): string {
  const head = `<tr><th>route</th><th>rule</th><th>mode</th><th>policy</th>${GROUPS.map(([, title]) => `<th class="num">${title}</th>`).join('')}<th class="num">queue now / peak 10 s</th><th>last 60 s</th></tr>`;
  const rows = view.rules.map((r) => {
    const groups = GROUPS.map(([g, title]) =>
      groupCell(g, r.rates[g], g === 'wouldRefuse' ? refuseShare(r) : '', title),
    ).join('');
    const queue = r.queue === undefined ? '–' : `${count(r.queue.depth)} / ${count(r.queue.peak10s)}`;
    return `<tr data-route="${esc(r.route)}" data-rule="${esc(r.rule)}"><td data-label="route">${esc(r.route)}</td><td data-label="rule">${esc(r.rule)}</td><td data-label="mode"><span class="mode mode-${esc(r.mode)}">${esc(r.mode)}</span></td><td data-label="policy"><code>${esc(r.policy)}</code></td>${groups}<td class="num queue" data-label="queue now / peak 10 s">${queue}</td><td data-label="last 60 s">${sparkline(r)}</td></tr>`;
  });
  return section(
    'rates',
    'Decisions per route and rule',
    `<p class="note">Each column: per second over the last 10 s, and below it the count since the gateway started. Admitted includes near-limit and queued; limited includes queue refusals; a shadow rule refuses nothing: it counts what it would admit and would refuse (with the share it would refuse); degraded is the store's failure policy deciding. Queue: requests waiting in a queue-mode rule's line. The last 60 s: admitted in green, limited in red, a shadow rule's would-refuse in amber, queued in blue.</p><div class="scroll"><table class="stack"><thead>${head}</thead><tbody>${rows.join('') || `<tr><td colspan="${6 + GROUPS.length}">no rules</td></tr>`}</tbody></table></div>`,
  );
}

/** One group's cell: its rate per second, and its count since the start below (`extra` after the count). */
function groupCell(group: string, figures: { perSecond: number; total: number }, extra = '', label = group): string {
  return `<td class="num group" data-label="${esc(label)}"><span class="rate-${group}">${rate(figures.perSecond)}</span><span class="unit">/s</span><br><span class="total-${group}">${count(figures.total)}</span>${extra}</td>`;
}

/** The share of a shadow rule's decisions that would refuse, e.g. ` (12.5%)`; nothing before its first decision. */
function refuseShare(r: RuleView): string {
  const decided = r.rates.wouldAdmit.total + r.rates.wouldRefuse.total;
  return decided === 0
    ? ''
    : ` <span class="share">(${((100 * r.rates.wouldRefuse.total) / decided).toFixed(1)}%)</span>`;
}

function upstreams(view: DashboardView): string {
  const rows = view.upstreams.map(({ route, upstream: u }) => {
    const errors = u.serverErrors === 0 ? '0' : `<span class="bad">${count(u.serverErrors)}</span>`;
    return `<tr data-route="${esc(route)}"><td>${esc(route)}</td><td class="num requests">${count(u.requests)}</td><td class="num p50">${ms(u.p50Ms)}</td><td class="num p99">${ms(u.p99Ms)}</td><td class="num max">${ms(u.maxMs)}</td><td class="num errors">${errors}</td></tr>`;
  });
  const head =
    '<tr><th>route</th><th class="num">forwarded</th><th class="num">p50 ms</th><th class="num">p99 ms</th><th class="num">max ms</th><th class="num">5xx</th></tr>';
  return section(
    'upstreams',
    'Upstream latency',
    `<p class="note">Time from forwarding a request to its upstream's answer, per route, over the last ${view.store.windowMs / 1000} s (of the latest 1,024 per route); 5xx includes the gateway's own 502 and 504.</p><div class="scroll"><table><thead>${head}</thead><tbody>${rows.join('') || '<tr><td colspan="6">no routes</td></tr>'}</tbody></table></div>`,
  );
}

const SERVICE_COLUMNS = ['admitted', 'limited', 'over', 'degraded', 'asked'] as const;
const SERVICE_HEADS: Readonly<Record<(typeof SERVICE_COLUMNS)[number], string>> = {
  admitted: 'admitted',
  limited: 'limited',
  over: 'over, let through',
  degraded: 'degraded',
  asked: 'asked',
};

function service(view: DashboardView): string {
  if (view.service.length === 0) return '';
  const head = `<tr><th>domain</th><th>descriptor</th>${SERVICE_COLUMNS.map((g) => `<th class="num">${SERVICE_HEADS[g]}</th>`).join('')}</tr>`;
  const rows = view.service.map((d) => {
    const groups = SERVICE_COLUMNS.map((g) => groupCell(g, d.rates[g])).join('');
    return `<tr data-domain="${esc(d.domain)}" data-descriptor="${esc(d.descriptor)}"><td>${esc(d.domain)}</td><td><code>${esc(d.descriptor)}</code></td>${groups}</tr>`;
  });
  return section(
    'service',
    'Rate limit service (Envoy gRPC and JSON API)',
    `<p class="note">Decisions of the rate limit service this gateway runs, per domain and descriptor, beside the gateway's own: each column per second over the last 10 s, and below it the count since the start. Over, let through: over a limit in shadow or quota mode, answered OK all the same; degraded is the store's failure policy deciding (or the memory store full); asked counts descriptors that only asked (hits_addend 0).</p><div class="scroll"><table><thead>${head}</thead><tbody>${rows.join('')}</tbody></table></div>`,
  );
}

/** An inline SVG of admitted (green) and limited (red) per second over the last minute; a shadow rule's would-refuse (amber), a queue's depth (blue). */
function sparkline(r: RuleView): string {
  const width = 120;
  const height = 28;
  const extra = [...(r.wouldRefuseSeries ?? []), ...(r.queue?.peaks ?? [])];
  const max = Math.max(1, ...r.admittedSeries, ...r.limitedSeries, ...extra);
  const line = (series: readonly number[]): string =>
    series
      .map(
        (v, i) =>
          `${((i / Math.max(1, series.length - 1)) * width).toFixed(1)},${(height - 1 - (v / max) * (height - 2)).toFixed(1)}`,
      )
      .join(' ');
  return `<svg class="spark" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="admitted and limited per second, last 60 s, peak ${count(max)}/s"><polyline fill="none" stroke="#2e7d32" stroke-width="1.5" points="${line(r.admittedSeries)}"/><polyline fill="none" stroke="#c62828" stroke-width="1.5" points="${line(r.limitedSeries)}"/>${r.wouldRefuseSeries === undefined ? '' : `<polyline class="would-refuse" fill="none" stroke="#f9a825" stroke-width="1.5" points="${line(r.wouldRefuseSeries)}"/>`}${r.queue === undefined ? '' : `<polyline class="queue-depth" fill="none" stroke="#1565c0" stroke-width="1.5" points="${line(r.queue.peaks)}"/>`}</svg>`;
}

function topKeys(view: DashboardView): string {
  const cards = view.rules
    .filter((r) => r.overLimit.length > 0 || r.near.length > 0)
    .map((r) => {
      const over = r.overLimit
        .map(
          (k) =>
            `<tr><td class="key">${esc(k.key)}</td><td class="num">${rate(k.perSecond)}</td><td class="num">±${rate(k.errorPerSecond)}</td></tr>`,
        )
        .join('');
      const near = r.near
        .map(
          (k) =>
            `<tr><td class="key">${esc(k.key)}</td><td><meter min="0" max="1" value="${k.usedShare.toFixed(3)}">${Math.round(k.usedShare * 100)}%</meter> ${Math.round(k.usedShare * 100)}%</td><td class="num">${count(k.remaining)} / ${count(k.limit)}</td><td class="num">${(k.ageMs / 1000).toFixed(1)} s</td></tr>`,
        )
        .join('');
      return `<div class="card" data-route="${esc(r.route)}" data-rule="${esc(r.rule)}"><h3>${esc(r.route)} / ${esc(r.rule)}</h3>
<div class="scroll"><table class="over-limit"><caption>Most often over the limit (refusals /s, decayed; error at most ±${rate(r.overLimitBoundPerSecond)})</caption><thead><tr><th>key</th><th class="num">/s</th><th class="num">error</th></tr></thead><tbody>${over || '<tr><td colspan="3">none lately</td></tr>'}</tbody></table></div>
<div class="scroll"><table class="near-limit"><caption>Nearest the limit (at their latest request)</caption><thead><tr><th>key</th><th>used</th><th class="num">remaining</th><th class="num">age</th></tr></thead><tbody>${near || '<tr><td colspan="4">none lately</td></tr>'}</tbody></table></div></div>`;
    });
  return section(
    'keys',
    'Top keys',
    cards.length === 0
      ? '<p class="note">No key has been near or over its limit lately.</p>'
      : `<div class="cards">${cards.join('\n')}</div>`,
  );
}

function refusals(view: DashboardView): string {
  const rows = view.refusals.map(
    (f) =>
      `<tr><td><time>${clockTime(f.atMs)}</time></td><td>${esc(f.route)}</td><td>${esc(f.rule)}</td><td class="key">${esc(f.key)}</td><td class="num">${count(f.limit)}</td><td class="num">${count(f.remaining)}</td><td class="num">${count(f.retryAfterMs)}</td><td>${esc(f.reason)}</td></tr>`,
  );
  const body = `<p class="note">${count(view.refusalsTotal)} refusals since the start; the latest ${view.refusals.length} (times in UTC).</p><div class="scroll"><table><thead><tr><th>time</th><th>route</th><th>rule</th><th>key</th><th class="num">limit</th><th class="num">remaining</th><th class="num">retry after ms</th><th>reason</th></tr></thead><tbody>${rows.join('') || '<tr><td colspan="8">no refusals yet</td></tr>'}</tbody></table></div>`;
  return section('refusals', 'Recent refusals', body);
}

function store(view: DashboardView): string {
  const h = view.store.health;
  const circuits =
    Object.entries(h.circuits)
      .map(([node, state]) => `${esc(node)}: <span class="${state === 'closed' ? 'ok' : 'bad'}">${esc(state)}</span>`)
      .join(', ') || 'closed (no change reported)';
  const errors =
    Object.entries(h.errorsByPolicy)
      .map(([policy, n]) => `${esc(policy)} ${count(n)}`)
      .join(', ') || 'none';
  const last =
    h.lastError === undefined
      ? ''
      : `<tr><th>latest failure</th><td>${clockTime(h.lastError.atMs)} UTC: ${esc(h.lastError.message)}</td></tr>`;
  const memory =
    view.store.kind === 'memory'
      ? '<p class="note">The memory store answers in-process: no round trips to time.</p>'
      : '';
  const rows = `<tr><th>backend</th><td id="store-kind">${esc(view.store.kind)}</td></tr><tr><th>round trips (last ${view.store.windowMs / 1000} s)</th><td>${count(h.calls)}, ${count(h.failedCalls)} failed</td></tr><tr><th>latency p50 / p99 / max</th><td>${ms(h.p50Ms)} / ${ms(h.p99Ms)} / ${ms(h.maxMs)} ms</td></tr><tr><th>failures by policy (since start)</th><td>${errors}</td></tr><tr><th>circuit</th><td>${circuits}</td></tr><tr><th>local fallback</th><td>${h.fallbackActive ? '<span class="bad">deciding</span>' : 'off'}</td></tr>${last}`;
  return section(
    'store',
    'Store',
    `${memory}<div class="scroll"><table class="facts"><tbody>${rows}</tbody></table></div>`,
  );
}

/** renderConfig returns the config part of the page: the file, when it was loaded and its content (secrets redacted). */
export function renderConfig(view: DashboardView): string {
  return `<h2>Active config</h2><p class="note">From <code>${esc(view.config.file)}</code>, loaded ${esc(view.config.loadedAt)}; secrets redacted.</p><details><summary>Show the config</summary><pre>${esc(view.config.text)}</pre></details>`;
}
