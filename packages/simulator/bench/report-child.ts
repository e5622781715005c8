/**
 * The memory benchmark's child process (see report.ts): loads the simulator and, with `run`,
 * simulates 2,000,000 requests through two lanes and renders the report; prints its peak RSS in
 * bytes. With `load`, it only loads the modules: the floor.
 */
import { renderCharts, renderHtmlReport, simulate } from '../src/index.js';

if (process.argv[2] === 'run') {
  const result = await simulate({
    seed: 1,
    durationMs: 100_000,
    traffic: [{ type: 'poisson', ratePerSecond: 20_000, keys: { count: 10_000, zipfExponent: 1 } }],
    policies: [
      { name: 'fixed window', policy: { type: 'fixed-window', limit: 100, windowMs: 1000 } },
      { name: 'token bucket', policy: { type: 'token-bucket', capacity: 100, refillPerSecond: 100 } },
    ],
  });
  renderHtmlReport(result, renderCharts(result));
}
process.stdout.write(String(process.resourceUsage().maxRSS * 1024));
