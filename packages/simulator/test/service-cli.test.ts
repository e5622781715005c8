import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { runCommand } from './run-command.js';
import { renderLineChart, renderServiceCharts, simulateService } from '../src/index.js';

const OVERLOAD = fileURLToPath(new URL('../scenarios/overload.yaml', import.meta.url));

const run = runCommand;

const FILES = [
  'concurrency.svg',
  'goodput.svg',
  'latency-tier-0.svg',
  'latency-tier-1.svg',
  'latency-tier-2.svg',
  'report.html',
  'summary.json',
  'summary.txt',
];

describe('floodgate simulate with a service scenario', () => {
  let dir = '';
  let first = { code: -1, stdout: '', stderr: '' };
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'floodgate-service-'));
    first = await run(['--scenario', OVERLOAD, '--out', 'report'], dir);
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes the charts, the report and the summaries', async () => {
    assert.equal(first.stderr, '');
    assert.equal(first.code, 0);
    assert.deepEqual((await readdir(join(dir, 'report'))).sort(), FILES);
    assert.match(
      first.stdout,
      /^floodgate service simulation: \d+ requests over 20000 ms, seed 7\nservice: 8 slots, lognormal service time, mean 20 ms, p99 60 ms/,
    );
    assert.match(
      first.stdout,
      /\nadaptive +\d+ +\d+ +\d+ +0 +0\.9\d+ +0 +\d+\n/,
      'the adaptive lane: nothing timed out, goodput over 0.9 of capacity',
    );
    assert.equal(await readFile(join(dir, 'report', 'summary.txt'), 'utf8'), first.stdout);
    const summary = JSON.parse(await readFile(join(dir, 'report', 'summary.json'), 'utf8'));
    assert.deepEqual(
      summary.lanes.map((l: { name: string }) => l.name),
      ['none', 'concurrency 40', 'adaptive', 'adaptive, tiered'],
    );
    assert.deepEqual(
      summary.capacity.map((c: { perSecond: number }) => c.perSecond),
      [400, 200, 400],
    );
    assert.equal(summary.lanes[2].tiers[0].name, 'critical');
    const html = await readFile(join(dir, 'report', 'report.html'), 'utf8');
    assert.doesNotMatch(
      html,
      /<script|https?:\/\/(?!www\.w3\.org\/2000\/svg)/,
      'self-contained: no script, no external URL',
    );
    assert.equal((html.match(/<svg /g) ?? []).length, 5);
    const concurrency = await readFile(join(dir, 'report', 'concurrency.svg'), 'utf8');
    assert.ok(!concurrency.includes('data-name="none"'), 'a lane without a limit has no line in the concurrency chart');
    assert.ok(concurrency.includes('data-name="service slots"'));
  });

  it('gives the same bytes for the same input, and other bytes for another seed', async () => {
    assert.equal((await run(['-s', OVERLOAD, '-o', 'again'], dir)).code, 0);
    assert.equal((await run(['-s', OVERLOAD, '-o', 'seeded', '--seed', '8'], dir)).code, 0);
    for (const name of FILES) {
      const bytes = await readFile(join(dir, 'report', name));
      assert.ok(bytes.equals(await readFile(join(dir, 'again', name))), `${name} is byte-identical`);
      assert.ok(!bytes.equals(await readFile(join(dir, 'seeded', name))), `${name} changes with the seed`);
    }
  });

  it('prints the JSON summary on request, and exits 2 naming the field of a bad service', async () => {
    const json = await run(['-s', OVERLOAD, '--format', 'json'], dir);
    assert.equal(json.code, 0);
    assert.ok(JSON.parse(json.stdout).lanes[2].goodputRatio >= 0.9);
    await writeFile(join(dir, 'bad.yaml'), (await readFile(OVERLOAD, 'utf8')).replace('p99Ms: 60', 'p99Ms: 10'));
    const bad = await run(['-s', 'bad.yaml'], dir);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /scenario field service\.serviceMs\.p99Ms must be above meanMs \(20\)/);
  });
});

describe('a line with gaps', () => {
  it('breaks where a step has no value', () => {
    const values = Float64Array.from([1, NaN, 2, 3, NaN]);
    const svg = renderLineChart({
      id: 'gaps',
      title: 't',
      yLabel: 'y',
      stepMs: 1000,
      series: [{ name: 'a', color: '#000000', lines: [{ kind: 'p50', values }] }],
    });
    const d = /<path class="line p50" d="([^"]*)"/.exec(svg)![1]!;
    assert.deepEqual(
      d
        .split(' ')
        .filter((w) => /^[ML]/.test(w))
        .map((w) => w[0]),
      ['M', 'M', 'L'],
    );
    assert.ok(!d.includes('NaN'));
  });
});

describe('the service charts', () => {
  it('leave out the limit chart when no lane has a limit, and draw one latency chart for one tier', () => {
    const result = simulateService({
      durationMs: 1000,
      traffic: [{ type: 'poisson', ratePerSecond: 100 }],
      service: { slots: 2, serviceMs: 10 },
      protections: ['none'],
    });
    assert.deepEqual(
      renderServiceCharts(result).map((c) => c.id),
      ['goodput', 'latency'],
    );
  });
});
