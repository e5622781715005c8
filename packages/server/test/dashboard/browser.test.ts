/**
 * The dashboard in a real browser: Debian's headless Chromium driven by playwright-core, against
 * a gateway process under traffic from a real client.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import type { KeyConfig } from '../../src/config/schema.js';
import { identityHider } from '../../src/gateway/key-hash.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { call } from '../support/http.js';
import { startUpstream, type TestUpstream } from '../support/upstream.js';

const TOKEN = 'dashboard-browser-token-0123456789';
const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const SCREENSHOT = join(tmpdir(), 'floodgate-dashboard.png');
const OVERLOAD_SCREENSHOT = join(tmpdir(), 'floodgate-dashboard-overload.png');

function configFor(upstream: string): string {
  return `
admin: { tokenEnv: FG_DASHBOARD_TOKEN }
routes:
  - name: api
    match: { path: /api/* }
    upstream: ${upstream}
    adaptive: { initialLimit: 10, minLimit: 2, maxLimit: 20, windowMs: 200 }
    circuitBreaker: { trigger: { type: errorCount, count: 50 }, minCalls: 50, openMs: 1000 }
    rules:
      - name: per-client
        policy: { algorithm: fixedWindow, limit: 5, windowMs: 600000 }
        key: { type: header, name: x-client }
      - name: trial
        mode: shadow
        policy: { algorithm: tokenBucket, capacity: 50, refillPerSecond: 1 }
        key: { type: header, name: x-client }
`;
}

/** Sends requests as a few light clients and one greedy one until stopped; returns a stop function. */
function traffic(gw: GatewayProcess): () => Promise<void> {
  let running = true;
  let sent = 0;
  const loop = (async () => {
    while (running) {
      const client = sent % 3 === 0 ? `light-${sent % 4}` : 'greedy-client';
      await call(gw.url(`/api/items/${sent}`), { headers: { 'x-client': client } });
      sent++;
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return async () => {
    running = false;
    await loop;
  };
}

describe(
  'the dashboard in headless Chromium, against a gateway under traffic',
  { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed` },
  () => {
    let upstream: TestUpstream;
    let gw: GatewayProcess;
    let browser: Browser;
    let stopTraffic: () => Promise<void> = async () => {};

    before(async () => {
      upstream = await startUpstream();
      [gw, browser] = await Promise.all([
        startGateway(configFor(upstream.origin), { env: { FG_DASHBOARD_TOKEN: TOKEN } }),
        chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 15_000 }),
      ]);
      await gw.waitForLog('ready');
      stopTraffic = traffic(gw);
    });
    after(async () => {
      await stopTraffic();
      await browser?.close();
      assert.equal(await gw?.stop(), 0);
      await upstream?.close();
    });

    it('refuses the page without the token, and with a wrong one', async () => {
      const bare = await browser.newContext();
      // Headless Chromium cannot show the login prompt, so the browser's own request client asks without credentials.
      const asked = await bare.request.get(gw.adminUrl('/dashboard'));
      assert.equal(asked.status(), 401);
      assert.match(asked.headers()['www-authenticate'] ?? '', /^Basic realm="floodgate dashboard"/);
      await bare.close();
      const wrong = await browser.newContext({
        httpCredentials: { username: 'admin', password: 'not-the-token-0123456789' },
      });
      const page = await wrong.newPage();
      const response = await page.goto(gw.adminUrl('/dashboard'));
      assert.equal(response?.status(), 401);
      assert.equal(await page.locator('#rates').count(), 0, 'nothing of the dashboard is shown');
      await wrong.close();
    });

    it('loads with the token (HTTP Basic), moves live, lists the throttled key, draws the overload charts and keeps screenshots', async () => {
      const context = await browser.newContext({
        httpCredentials: { username: 'admin', password: TOKEN },
        viewport: { width: 1400, height: 900 },
      });
      const page = await context.newPage();
      const response = await page.goto(gw.adminUrl('/dashboard'));
      assert.equal(response?.status(), 200);
      const row = page.locator('#rates tr[data-route="api"][data-rule="per-client"]');
      // Limited, not admitted: every client has used its 5 within the first second of traffic, while the
      // greedy one is refused all along, so only the limited count is sure to grow while the page is open.
      const first = Number((await row.locator('.total-limited').textContent())!.replace(/,/g, ''));
      // The page changes without a reload: the event stream replaces the live sections.
      await page.waitForFunction(
        (before) => {
          // Runs in the page: the tests are compiled without the DOM's types.
          const page = globalThis as unknown as {
            document: { querySelector(selector: string): { textContent: string | null } | null };
          };
          const cell = page.document.querySelector('#rates tr[data-rule="per-client"] .total-limited');
          return cell !== null && Number(cell.textContent!.replace(/,/g, '')) > before;
        },
        first,
        { timeout: 5_000 },
      );
      assert.match((await page.locator('#conn').textContent())!, /^live/);
      const over = page.locator('.card[data-route="api"][data-rule="per-client"] table.over-limit td.key').first();
      await over.waitFor({ timeout: 5_000 });
      // Keys are hashed by default (no secret in this config: the unkeyed hash), never shown raw.
      const hide = identityHider({ type: 'header', name: 'x-client' } as KeyConfig, { hash: true, secret: undefined })!;
      const greedy = hide('header:x-client:greedy-client');
      assert.match(greedy, /^header:x-client:#/);
      assert.equal(await over.textContent(), greedy, 'the throttled key leads the top list');
      assert.ok(!(await page.content()).includes('greedy-client'), 'the raw key is nowhere on the page');
      const refusal = page.locator('#refusals tbody tr', { hasText: greedy }).first();
      const cells = await refusal.locator('td').allTextContents();
      assert.deepEqual(
        [cells[1], cells[2], cells[3], cells[4], cells[5], cells[7]],
        ['api', 'per-client', greedy, '5', '0', 'limit'],
        'why it was refused',
      );
      const overload = page.locator('#overload .overload-scope[data-scope="route:api"]');
      // The adaptive limit's first window has to close before its latency line is drawn. A steady
      // latency draws a flat line, which has no height, and Playwright counts an element with an
      // empty box as hidden: wait for the line to be there, not to be "visible".
      await overload.locator('svg.chart.latency path.line-sample-rtt').waitFor({ state: 'attached', timeout: 5_000 });
      assert.match(
        (await overload.locator('svg.chart.latency path.line-sample-rtt').getAttribute('d'))!,
        /^M[\d.]+ [\d.]+/,
      );
      assert.equal(await overload.locator('svg.chart.concurrency path.line-limit').count(), 1, 'the limit over time');
      assert.match(
        (await overload.locator('.figures').textContent())!,
        /^limit \d+ · in flight \d+ · queued 0 · latency [\d.]+ ms, baseline [\d.]+ ms/,
      );
      assert.equal(await overload.locator('.circuit-state').textContent(), 'closed');
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      // The page redraws its sections live: a section replaced mid-screenshot is taken again.
      for (let attempt = 1; ; attempt++) {
        try {
          await page.locator('#overload').screenshot({ path: OVERLOAD_SCREENSHOT });
          break;
        } catch (err) {
          if (attempt >= 5 || !/not attached to the DOM/.test((err as Error).message)) throw err;
        }
      }
      console.log(`dashboard screenshots: ${SCREENSHOT}, ${OVERLOAD_SCREENSHOT}`);
      assert.ok(existsSync(SCREENSHOT) && existsSync(OVERLOAD_SCREENSHOT));
      await context.close();
    });

    it('reads without JavaScript: the numbers are in the HTML', async () => {
      const context = await browser.newContext({
        httpCredentials: { username: 'admin', password: TOKEN },
        javaScriptEnabled: false,
      });
      const page = await context.newPage();
      await page.goto(gw.adminUrl('/dashboard'));
      const limited = Number(
        (await page.locator('#rates tr[data-rule="per-client"] .total-limited').textContent())!.replace(/,/g, ''),
      );
      assert.ok(limited > 0, `limited total ${limited}`);
      assert.match((await page.locator('#store-kind').textContent())!, /memory/);
      assert.match(
        (await page.locator('#overload [data-scope="route:api"] .limit').textContent())!,
        /^\d+$/,
        'the overload figures too',
      );
      assert.equal(await page.locator('#overload [data-scope="route:api"] svg.chart').count(), 2, 'and its charts');
      await context.close();
    });
  },
);
