/** The dashboard page's shell: inline CSS, the server-rendered sections and a small inline script for live updates. */
import { esc, renderConfig, renderLive } from './render.js';
import type { DashboardView } from './view.js';

const CSS = `
:root { color-scheme: light; --fg: #1d2329; --muted: #5f6b76; --line: #dde3e8; --bg: #f6f8fa; --ok: #2e7d32; --bad: #c62828; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; align-items: baseline; gap: 1rem; padding: .8rem 1.5rem; background: #10242f; color: #fff; }
header h1 { margin: 0; font-size: 1.25rem; font-weight: 600; }
header #conn { margin-left: auto; font-size: .85rem; color: #b8c7d0; }
main, #config { padding: 0 1.5rem; }
section, #config { margin: 1rem 0; }
section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .6rem 1rem .9rem; }
#config { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .6rem 1rem; margin: 1rem 1.5rem; }
h2 { font-size: 1.05rem; margin: .2rem 0 .5rem; }
h3 { font-size: .95rem; margin: .2rem 0 .4rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid var(--line); vertical-align: middle; }
th { font-weight: 600; color: var(--muted); font-size: .8rem; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.key { font-family: ui-monospace, Menlo, Consolas, monospace; overflow-wrap: anywhere; }
caption { text-align: left; font-size: .8rem; color: var(--muted); padding: .3rem 0; }
code, pre { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: .85rem; }
pre { background: var(--bg); padding: .6rem; overflow: auto; max-height: 24rem; }
.note, .summary { color: var(--muted); font-size: .85rem; margin: .2rem 0 .5rem; }
.summary { margin: .8rem 0 0; }
.ok { color: var(--ok); font-weight: 600; }
.bad { color: var(--bad); font-weight: 600; }
.rate-limited, .total-limited { color: var(--bad); }
.rate-admitted, .total-admitted { color: var(--ok); }
.mode { font-size: .75rem; padding: 0 .35rem; border-radius: 3px; background: #e8eef2; }
.mode-shadow { background: #fff3cd; }
.mode-queue { background: #e3f2fd; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(32rem, 100%), 1fr)); gap: 1rem; }
.scroll { overflow-x: auto; }
.share { color: #8d6e00; font-size: .8rem; }
td.group { line-height: 1.2; }
td.group .unit { color: var(--muted); font-size: .75rem; }
td.group [class^="total-"] { font-size: .8rem; color: var(--muted); }
@media (max-width: 40rem) { main, #config { padding: 0 .5rem; } #config { margin: 1rem .5rem; } header { flex-wrap: wrap; padding: .6rem .75rem; } header #conn { margin-left: 0; } .facts th { width: auto; } }
@media (max-width: 40rem) {
  table.stack thead { display: none; }
  table.stack tr { display: block; border-bottom: 2px solid var(--line); padding: .3rem 0; }
  table.stack td { display: flex; justify-content: flex-end; align-items: baseline; gap: .25rem; border: 0; padding: .1rem .25rem; text-align: right; }
  table.stack td::before { content: attr(data-label); margin-right: auto; color: var(--muted); font-size: .8rem; text-align: left; }
  table.stack td.group br { display: none; }
  table.stack td.group [class^="total-"]::before { content: " · "; }
}
.card { border: 1px solid var(--line); border-radius: 4px; padding: .5rem .75rem; }
.card table { margin-bottom: .5rem; }
.facts th { width: 16rem; }
meter { width: 5rem; }
figure { margin: .3rem 0 .5rem; }
figcaption { font-size: .8rem; color: var(--muted); }
.legend-item { margin-right: .8rem; white-space: nowrap; }
.figures { margin: .2rem 0 .4rem; font-variant-numeric: tabular-nums; }
.circuit { margin: .5rem 0 .2rem; }
.circuit-state { font-weight: 600; padding: 0 .4rem; border-radius: 3px; color: #fff; background: var(--ok); }
.state-half-open { background: #f9a825; color: var(--fg); }
.state-open { background: var(--bad); }
.probing { color: #6a1b9a; }
`;

/** The live-update script: replaces the live sections on every `snapshot` event, and the config when it was reloaded. */
const SCRIPT = `
(() => {
  const live = document.getElementById('live');
  const config = document.getElementById('config');
  const conn = document.getElementById('conn');
  let loadedAt = config.dataset.loadedAt;
  const events = new EventSource(location.pathname.replace(/\\/?$/, '/events'));
  events.addEventListener('snapshot', (message) => {
    const update = JSON.parse(message.data);
    live.innerHTML = update.live;
    if (update.loadedAt !== loadedAt) {
      config.innerHTML = update.config;
      config.dataset.loadedAt = loadedAt = update.loadedAt;
    }
    conn.textContent = 'live · updated every second';
  });
  events.addEventListener('error', () => { conn.textContent = 'reconnecting…'; });
})();
`;

/** renderPage returns the whole dashboard page for `view`; `nonce` allows its inline style and script under the page's CSP. */
export function renderPage(view: DashboardView, nonce: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>floodgate dashboard</title>
<noscript><meta http-equiv="refresh" content="5"></noscript>
<style nonce="${nonce}">${CSS}</style>
</head>
<body>
<header><h1>floodgate</h1><span>gateway dashboard</span><span id="conn">static snapshot (reloads every 5 s without JavaScript)</span></header>
<main id="live">
${renderLive(view)}
</main>
<div id="config" data-loaded-at="${esc(view.config.loadedAt)}">${renderConfig(view)}</div>
<script nonce="${nonce}">${SCRIPT}</script>
</body>
</html>
`;
}

/** renderUpdate returns one live update's data: the live fragment, and the config fragment with its load time. */
export function renderUpdate(view: DashboardView): string {
  return JSON.stringify({
    atMs: view.atMs,
    live: renderLive(view),
    loadedAt: view.config.loadedAt,
    config: renderConfig(view),
  });
}
