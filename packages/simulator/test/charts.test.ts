import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { renderCharts, renderHtmlReport, simulate, type Chart, type SimulationResult } from '../src/index.js';
import { PALETTE } from '../src/render/format.js';

/** Where the rendered charts are kept after the run, to be looked at. */
const PNG_DIR = join(tmpdir(), 'floodgate-simulator-charts');

const LAUNCH_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

interface ChartDom {
  xTicks: string[];
  yTicks: string[];
  axisLabels: string[];
  series: string[];
  legend: string[];
  drawnPaths: number;
  limitLines: number;
  promiseLines: number;
  boundLines: number;
}

// The browser-side code is plain JavaScript in strings: it runs in the page, where the DOM is,
// and is neither type-checked against node's globals nor rewritten by the TypeScript loader.

/** Reads the chart's structure from the DOM, as the browser laid it out. */
const READ_CHART_DOM = `(() => {
  const texts = (selector) => [...document.querySelectorAll(selector)].map((e) => e.textContent ?? '');
  const drawn = [...document.querySelectorAll('g.series path')].filter((p) => p.getBBox().width > 100);
  return {
    xTicks: texts('g.x-axis g.tick text'),
    yTicks: texts('g.y-axis g.tick text'),
    axisLabels: texts('g.axis text.axis-label'),
    series: [...document.querySelectorAll('g.series')].map((g) => g.getAttribute('data-name') ?? ''),
    legend: [...document.querySelectorAll('g.legend g.legend-item[data-name]')].map((g) => g.getAttribute('data-name') ?? ''),
    drawnPaths: drawn.length,
    limitLines: document.querySelectorAll('g.series line.limit').length,
    promiseLines: document.querySelectorAll('g.series line.promise').length,
    boundLines: document.querySelectorAll('g.series line.bound').length,
  };
})()`;

/** Decodes a PNG (base64) in the page and counts the pixels not white, and those near each colour. */
const COUNT_PIXELS = `(async ({ data, colors }) => {
  const img = new Image();
  img.src = 'data:image/png;base64,' + data;
  await img.decode();
  const canvas = document.createElement('canvas');
  canvas.width = img.width;
  canvas.height = img.height;
  const ctx = canvas.getContext('2d');
  ctx.drawImage(img, 0, 0);
  const px = ctx.getImageData(0, 0, img.width, img.height).data;
  const rgb = colors.map((c) => [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16)));
  const perColor = rgb.map(() => 0);
  let ink = 0;
  for (let i = 0; i < px.length; i += 4) {
    const r = px[i], g = px[i + 1], b = px[i + 2];
    if (r < 245 || g < 245 || b < 245) ink++;
    rgb.forEach(([cr, cg, cb], k) => {
      if (Math.abs(r - cr) + Math.abs(g - cg) + Math.abs(b - cb) < 60) perColor[k]++;
    });
  }
  return { ink, perColor };
})`;

const READ_REPORT = `(() => ({
  rows: document.querySelectorAll('table.summary tbody tr').length,
  charts: document.querySelectorAll('figure svg').length,
  scripts: document.querySelectorAll('script').length,
  title: document.querySelector('h1')?.textContent,
}))()`;

function readChartDom(page: Page): Promise<ChartDom> {
  return page.evaluate(READ_CHART_DOM) as Promise<ChartDom>;
}

function countPixels(page: Page, png: Buffer, colors: readonly string[]): Promise<{ ink: number; perColor: number[] }> {
  return page.evaluate(`${COUNT_PIXELS}(${JSON.stringify({ data: png.toString('base64'), colors })})`) as Promise<{
    ink: number;
    perColor: number[];
  }>;
}

describe('the charts, looked at in headless Chromium', () => {
  let browser: Browser;
  let page: Page;
  let result: SimulationResult;
  let charts: Chart[];

  before(async () => {
    result = await simulate({
      seed: 2,
      durationMs: 4000,
      bucketMs: 50,
      traffic: [
        { type: 'boundary-burst', boundaryMs: 1000, count: 60 },
        { type: 'poisson', ratePerSecond: 90, startMs: 1500 },
      ],
      policies: [
        { name: 'fixed window', policy: { type: 'fixed-window', limit: 60, windowMs: 1000 } },
        { name: 'sliding log', policy: { type: 'sliding-window-log', limit: 60, windowMs: 1000 } },
        {
          name: 'bucket, wait',
          mode: 'wait',
          maxWaitMs: 400,
          policy: { type: 'token-bucket', capacity: 20, refillPerSecond: 60 },
        },
      ],
    });
    charts = renderCharts(result);
    await mkdir(PNG_DIR, { recursive: true });
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: LAUNCH_ARGS });
    page = await browser.newPage({ viewport: { width: 900, height: 380 } });
    // Nothing may be fetched: the charts and the report are self-contained.
    await page.route('**/*', (route) => (route.request().url().startsWith('data:') ? route.continue() : route.abort()));
  });
  after(async () => {
    await browser?.close();
  });

  it('draws axes with ticks and labels, one series per policy, a legend, and pixels in every series colour', async () => {
    const all = result.lanes.map((l) => l.name);
    assert.deepEqual(
      charts.map((c) => c.id),
      ['admitted', 'state-1', 'state-2', 'state-3', 'wait', 'window'],
    );
    for (const chart of charts) {
      // A state chart is one lane's; the wait chart draws only the lanes that wait.
      const lanes = chart.id.startsWith('state-')
        ? [Number(chart.id.slice('state-'.length)) - 1]
        : chart.id === 'wait'
          ? [2]
          : [0, 1, 2];
      const names = lanes.map((k) => all[k]!);
      await page.setContent(`<!doctype html><html><body style="margin:0;background:#fff">${chart.svg}</body></html>`);
      const dom = await readChartDom(page);
      assert.ok(dom.xTicks.length >= 4, `${chart.id}: x ticks ${dom.xTicks}`);
      assert.equal(dom.xTicks[0], '0');
      assert.ok(dom.yTicks.length >= 3, `${chart.id}: y ticks ${dom.yTicks}`);
      assert.equal(dom.axisLabels.length, 2);
      assert.equal(dom.axisLabels[0], 'time (s)');
      assert.deepEqual(dom.series, names, `${chart.id}: one series per policy`);
      assert.deepEqual(dom.legend, names, `${chart.id}: a legend entry per policy`);
      assert.ok(dom.drawnPaths >= names.length, `${chart.id}: every series laid out across the plot`);
      if (chart.id === 'window') {
        assert.equal(dom.limitLines, names.length, 'a nominal limit line per policy');
        assert.equal(dom.promiseLines, 2, 'a promise line where it differs from the limit: fixed window, bucket');
      }
      if (chart.id.startsWith('state-')) assert.equal(dom.boundLines, 1, `${chart.id}: the state's bound`);
      const png = await page.locator('svg').screenshot({ path: join(PNG_DIR, `${chart.id}.png`) });
      const pixels = await countPixels(
        page,
        png,
        lanes.map((k) => PALETTE[k]!),
      );
      assert.ok(pixels.ink > 5000, `${chart.id}: ${pixels.ink} non-white pixels`);
      pixels.perColor.forEach((n, k) =>
        assert.ok(n > 100, `${chart.id}: series ${names[k]} has ${n} pixels of its colour`),
      );
    }
  });

  it('renders the HTML report offline, with its table and charts', async () => {
    const html = renderHtmlReport(result, charts);
    await writeFile(join(PNG_DIR, 'report.html'), html);
    await page.setViewportSize({ width: 1000, height: 800 });
    await page.setContent(html);
    const shape = await page.evaluate(READ_REPORT);
    assert.deepEqual(shape, { rows: 3, charts: 6, scripts: 0, title: 'floodgate simulation' });
    await page.screenshot({ path: join(PNG_DIR, 'report.png'), fullPage: true });
  });
});

describe('what the charts say in words', () => {
  const lane = (name: string, policy: object, extra: object = {}) => ({ name, policy, ...extra });

  it('draws no wait chart when no lane waits, and waited only where a lane waits', async () => {
    const result = await simulate({
      durationMs: 2000,
      traffic: [{ type: 'constant', ratePerSecond: 200 }],
      policies: [lane('fixed', { type: 'fixed-window', limit: 50, windowMs: 500 })],
    });
    const charts = renderCharts(result);
    assert.deepEqual(
      charts.map((c) => c.id),
      ['admitted', 'state-1', 'window'],
    );
    assert.doesNotMatch(charts[0]!.svg, /class="line waited"/);
  });

  it('keeps a readable scale under a spike, and marks the spike with its peak', async () => {
    const result = await simulate({
      durationMs: 10_000,
      bucketMs: 100,
      traffic: [
        { type: 'constant', ratePerSecond: 20 },
        { type: 'burst', atMs: 5000, count: 2000 },
      ],
      policies: [lane('bucket', { type: 'token-bucket', capacity: 10, refillPerSecond: 20 })],
    });
    const admitted = renderCharts(result)[0]!.svg;
    const yTicks = [...admitted.matchAll(/<g class="tick"><line x1="64"[^>]*\/><text[^>]*>([\d.]+)<\/text>/g)].map(
      (m) => Number(m[1]),
    );
    const top = Math.max(...yTicks);
    assert.ok(top < 1000, `the offered spike (20,000/s) does not set the scale: top tick ${top}`);
    assert.ok(top >= 20, `the steady 20/s stays on the scale: top tick ${top}`);
    assert.match(admitted, /<g class="spikes"><path class="spike"/);
    assert.match(admitted, /class="spike-label"[^>]*>20020<\/text>/, 'the peak, 2002 in 100 ms, written per second');
    assert.match(admitted, /beyond the scale: a spike/);
  });

  it('says when lanes coincide and when their windows differ', async () => {
    const result = await simulate({
      durationMs: 3000,
      traffic: [{ type: 'poisson', ratePerSecond: 300 }],
      policies: [
        lane('gcra', { type: 'gcra', rate: 100, periodMs: 1000, maxBurst: 99 }),
        lane('bucket', { type: 'token-bucket', capacity: 100, refillPerSecond: 100 }),
        lane('minute', { type: 'fixed-window', limit: 6000, windowMs: 60_000 }),
      ],
    });
    const charts = renderCharts(result);
    const admitted = charts[0]!.svg;
    assert.match(admitted, /bucket = gcra \(coincide\)/);
    const window = charts.find((c) => c.id === 'window')!.svg;
    assert.match(window, /window lengths differ:/);
    assert.match(window, / minute: 60000 ms/);
  });
});
