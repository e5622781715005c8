/**
 * The dashboard's newer figures in Debian's headless Chromium, at a desktop and a phone width, with
 * and without JavaScript: a shadow rule's would-admit and would-refuse, a queue-mode rule's depth,
 * upstream latency per route, the rate limit service's decisions beside the gateway's, the process
 * it is of; and the startup log line that says where the dashboard is. Screenshots are kept.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { request } from 'undici';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { call } from '../support/http.js';
import { startUpstream, type TestUpstream } from '../support/upstream.js';

const TOKEN = 'dashboard-widths-token-0123456789';
const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'];
const WIDTHS = [
  { name: 'wide', width: 1400, height: 900 },
  { name: 'narrow', width: 390, height: 844 },
] as const;

const DESCRIPTORS =
  'domain: api\ndescriptors:\n  - key: tenant\n    rate_limit: { unit: minute, requests_per_unit: 2 }\n';

function configFor(upstream: string, descriptors: string): string {
  return `
admin: { tokenEnv: FG_WIDTHS_TOKEN }
rateLimitService:
  http: { port: 0 }
  descriptors: [${JSON.stringify(descriptors)}]
routes:
  - name: api
    match: { path: /api/* }
    upstream: ${upstream}
    rules:
      - name: trial
        mode: shadow
        policy: { algorithm: fixedWindow, limit: 3, windowMs: 600000 }
        key: { type: header, name: x-client }
  - name: uploads
    match: { methods: [POST], path: /upload/* }
    upstream: ${upstream}
    rules:
      - name: line
        mode: queue
        policy: { algorithm: leakyBucket, capacity: 1, leakPerSecond: 0.15 }
        queue: { maxWaitMs: 60000, maxQueue: 20 }
  - name: plain
    upstream: ${upstream}
`;
}

describe(
  'the dashboard at two widths, with and without JavaScript',
  { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed` },
  () => {
    let dir: string;
    let upstream: TestUpstream;
    let gw: GatewayProcess;
    let browser: Browser;
    let uploads: Promise<unknown>[] = [];
    const leave = new AbortController();

    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'floodgate-widths-'));
      const descriptors = join(dir, 'ratelimit.yaml');
      await writeFile(descriptors, DESCRIPTORS);
      upstream = await startUpstream();
      [gw, browser] = await Promise.all([
        startGateway(configFor(upstream.origin, descriptors), { env: { FG_WIDTHS_TOKEN: TOKEN } }),
        chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 15_000 }),
      ]);
      await gw.waitForLog('ready');
      // A shadow rule that would refuse 7 of 10; three forwarded routes; the service deciding 4 times.
      for (let i = 0; i < 10; i++) await call(gw.url('/api/items'), { headers: { 'x-client': 'trial-client' } });
      for (let i = 0; i < 3; i++) await call(gw.url(`/other/${i}`));
      const listening = gw.logs.find((l) => l.msg === 'listening')!;
      for (let i = 0; i < 4; i++)
        await request(`http://127.0.0.1:${String(listening['httpPort'])}/json`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ domain: 'api', descriptors: [{ entries: [{ key: 'tenant', value: 'acme' }] }] }),
        }).then((r) => r.body.text());
      // Ten uploads through a line that lets one pass every 6.7 s: nine wait (the last for 60 s) while the pages are read.
      uploads = Array.from({ length: 10 }, (_, i) =>
        request(gw.url(`/upload/${i}`), { method: 'POST', body: 'x', signal: leave.signal }).then((r) => r.body.text()),
      );
      await waitFor(async () => {
        const json = await call(gw.adminUrl('/dashboard/snapshot.json'), {
          headers: { authorization: `Bearer ${TOKEN}` },
        });
        const view = JSON.parse(json.body) as { rules: Array<{ rule: string; queue?: { depth: number } }> };
        return view.rules.find((r) => r.rule === 'line')?.queue?.depth === 9;
      });
    });
    after(async () => {
      leave.abort();
      await Promise.allSettled(uploads);
      await browser?.close();
      assert.equal(await gw?.stop(), 0);
      await upstream?.close();
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    });

    it("says where the dashboard is in the startup log's listening line", () => {
      const listening = gw.logs.find((l) => l.msg === 'listening')!;
      assert.equal(listening['dashboard'], `http://127.0.0.1:${gw.adminPort}/dashboard`);
    });

    for (const size of WIDTHS)
      for (const javaScript of [true, false])
        it(`${size.name} (${size.width} px), JavaScript ${javaScript ? 'on' : 'off'}: every figure is shown, nothing overflows the page`, async () => {
          const context = await browser.newContext({
            httpCredentials: { username: 'admin', password: TOKEN },
            viewport: { width: size.width, height: size.height },
            javaScriptEnabled: javaScript,
          });
          const page = await context.newPage();
          assert.equal((await page.goto(gw.adminUrl('/dashboard')))?.status(), 200);
          if (javaScript)
            await page.waitForFunction(() => {
              const dom = (globalThis as unknown as { document: Dom }).document;
              return /^live/.test(String(dom.getElementById('conn')?.textContent));
            });
          await checkFigures(page);
          const overflow = await page.evaluate(() => {
            const dom = (globalThis as unknown as { document: Dom }).document;
            return dom.documentElement.scrollWidth - dom.documentElement.clientWidth;
          });
          assert.ok(overflow <= 0, `the page is ${overflow} px wider than the ${size.width} px screen`);
          // The figure an operator trying a shadow rule needs is on screen, not past a sideways scroll.
          const refuse = await page.locator('#rates tr[data-rule="trial"] .total-wouldRefuse').boundingBox();
          assert.ok(refuse !== null && refuse.x + refuse.width <= size.width, `would refuse at x ${refuse?.x}`);
          const shot = join(tmpdir(), `floodgate-dashboard-${size.name}-${javaScript ? 'js' : 'nojs'}.png`);
          await page.screenshot({ path: shot, fullPage: true });
          console.log(`dashboard screenshot: ${shot}`);
          assert.ok(existsSync(shot));
          await context.close();
        });
  },
);

/** The page's document as these checks read it (the tests compile without the DOM's types). */
interface Dom {
  getElementById(id: string): { textContent: string | null } | null;
  documentElement: { scrollWidth: number; clientWidth: number };
}

/** waitFor resolves once `check` does (every 50 ms, 10 s at most). */
async function waitFor(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('not within 10 s');
}

/** checkFigures asserts each figure this test's traffic put on the page. */
async function checkFigures(page: Page): Promise<void> {
  const text = async (selector: string): Promise<string> =>
    (await page.locator(selector).first().textContent())!.trim();
  const trial = '#rates tr[data-route="api"][data-rule="trial"]';
  assert.equal(await text(`${trial} .total-wouldAdmit`), '3');
  assert.equal(await text(`${trial} .total-wouldRefuse`), '7');
  assert.equal(await text(`${trial} .share`), '(70.0%)');
  assert.equal(await text(`${trial} .total-limited`), '0', 'a shadow rule refuses nothing');
  const [depth, peak] = (await text('#rates tr[data-rule="line"] .queue')).split(' / ').map(Number);
  // Nine joined the line; one leaves it every 6.7 s while the pages are read.
  assert.ok(depth! >= 1 && peak! >= depth! && peak! <= 9, `queue now ${depth}, peak ${peak}`);
  assert.equal(await text('#upstreams tr[data-route="api"] .requests'), '10');
  assert.equal(await text('#upstreams tr[data-route="plain"] .requests'), '3');
  assert.match(await text('#upstreams tr[data-route="api"] .p99'), /^[\d.]+$/);
  const service = '#service tr[data-domain="api"][data-descriptor="tenant"]';
  assert.equal(await text(`${service} .total-admitted`), '2');
  assert.equal(await text(`${service} .total-limited`), '2');
  assert.match(await text('#process'), /^\S+ pid \d+ \(port \d+, admin \d+\)$/);
}
