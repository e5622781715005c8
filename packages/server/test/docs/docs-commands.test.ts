/**
 * Every command the docs show (README.md, docs/*.md, the packages', examples' and benchmarks'
 * READMEs) runs as written, from the repository root, with the checkout's `node_modules/.bin` on PATH (so `floodgate` is the workspace's command, as `npx
 * floodgate` finds it). A command either runs here (to exit code 0; a server until it is up, its
 * clients against it, then SIGTERM to its process group), or is one CI's own script (.ci/run) runs,
 * or is marked in its page as not run in CI, with the reason (see ./commands.ts).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  ciRunCommands,
  extractCommands,
  notRunMarks,
  runByCi,
  splitChain,
  type DocCommand,
  type NotRunMark,
} from './commands.js';
import { redisPortsNamed, startRedisOn } from './redis.js';
import { REPO_ROOT, runToEnd, startServer, type Server } from './run.js';

/** The docs: the README, docs/*.md, each package's README, the examples' and the benchmarks' READMEs. */
const PAGES = [
  'README.md',
  ...markdownIn('docs'),
  ...readdirSync(join(REPO_ROOT, 'packages')).map((p) => `packages/${p}/README.md`),
  'examples/README.md',
  ...readdirSync(join(REPO_ROOT, 'examples'), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => `examples/${d.name}/README.md`),
  'bench/README.md',
].filter((page) => existsSync(join(REPO_ROOT, page)));
const CI_SCRIPT = '.ci/run';
const COMMAND_TIMEOUT_MS = 60_000;
const SERVER_START_MS = 30_000;

/** What a command prints, where its page says so. */
const EXPECTED_OUTPUT = new Map<string, RegExp>([
  // "watch RateLimit count down": the first answer is a 200 carrying the draft's headers.
  ['curl -i http://127.0.0.1:8080/api/hello', /^HTTP\/1\.1 200 [^\n]*\r?\n(?:[^\n]*\n)*?RateLimit: /i],
  // "prints 503 at once, then 200 twice".
  [
    "for i in 1 2 3; do curl -s -o /dev/null -w '%{http_code}\\n' http://127.0.0.1:8080/slow & done; wait",
    /^503\n200\n200\n$/,
  ],
  // The README's quick starts: each gateway answers through its demo upstream with the draft's
  // headers, and the rate limit service answers Envoy's JSON request.
  ['curl -i http://127.0.0.1:8084/hello', /^HTTP\/1\.1 200 [^\n]*\r?\n(?:[^\n]*\n)*?RateLimit: /i],
  [
    `curl -s -X POST http://127.0.0.1:8090/json -d '{"domain":"rl","descriptors":[{"entries":[{"key":"foo","value":"x"}]}]}'`,
    /^\{"overallCode":"OK","statuses":\[\{"code":"OK"/,
  ],
  ["curl -i -H 'x-priority: batch' http://127.0.0.1:8086/report", /^HTTP\/1\.1 200 /],
]);

/** One command to account for: a part of a shown command chain, at its first place in the docs. */
interface Unit {
  readonly text: string;
  readonly at: DocCommand;
}

const pages = PAGES.map((file) => ({ file, text: readFileSync(join(REPO_ROOT, file), 'utf8') }));
const shown = pages.flatMap((page) => extractCommands(page.file, page.text));
const marks = pages.flatMap((page) => notRunMarks(page.file, page.text));
const ciLines = ciRunCommands(readFileSync(join(REPO_ROOT, CI_SCRIPT), 'utf8'));

const units = new Map<string, Unit>();
for (const command of shown)
  for (const text of splitChain(command.text)) if (!units.has(text)) units.set(text, { text, at: command });

const markOf = (unit: Unit): NotRunMark | undefined =>
  marks.find((mark) => mark.text === unit.text && mark.file === unit.at.file) ??
  marks.find((mark) => mark.text === unit.text);
const isServer = (text: string): boolean =>
  /^(npm start|(npx )?floodgate (serve|ratelimit))(\s|$)/.test(text) && !/\s--(check|help)\b/.test(text);
const portsNamed = (text: string): number[] =>
  [...text.matchAll(/\bhttps?:\/\/(?:127\.0\.0\.1|localhost):(\d+)/g)].map((m) => Number(m[1]));
const isClient = (text: string): boolean => !isServer(text) && portsNamed(text).length > 0;

const all = [...units.values()];
const marked = all.filter((u) => markOf(u) !== undefined);
const byCi = all.filter((u) => markOf(u) === undefined && runByCi(u.text, ciLines));
const toRun = all.filter((u) => markOf(u) === undefined && !runByCi(u.text, ciLines));
const servers = toRun.filter((u) => isServer(u.text));
const clients = toRun.filter((u) => isClient(u.text));
const plain = toRun.filter((u) => !isServer(u.text) && !isClient(u.text));

/** configNamed returns the text of the config file a command names with `--config`, or '' (none, or not a file here). */
function configNamed(text: string): string {
  const file = /--config[ =](\S+)/.exec(text)?.[1];
  return file !== undefined && existsSync(join(REPO_ROOT, file)) ? readFileSync(join(REPO_ROOT, file), 'utf8') : '';
}

/** markdownIn returns the Markdown files of a folder of the repository, by name. */
function markdownIn(folder: string): string[] {
  return readdirSync(join(REPO_ROOT, folder))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `${folder}/${name}`);
}

const where = (unit: Unit): string => `${unit.at.file}:${unit.at.line}`;
const fail = (unit: Unit, why: string, out: { stdout: string; stderr: string }): string =>
  `${where(unit)}: \`${unit.text}\` ${why}\nstdout:\n${out.stdout.slice(-4000)}\nstderr:\n${out.stderr.slice(-4000)}`;

// The servers run first, one at a time and with nothing else running: a server compiled through tsx
// on start is slow to come up on a 2-core machine while two dozen other commands compile theirs. The
// other commands then run a few at a time, as many as the machine has cores and one more.
describe('the commands the docs show', { timeout: 360_000 }, () => {
  // One redis-server per loopback port a command names, up while the commands run.
  const stopRedis: Array<() => Promise<void>> = [];
  before(async () => {
    const ports = new Set(toRun.flatMap((u) => [...redisPortsNamed(u.text), ...redisPortsNamed(configNamed(u.text))]));
    for (const port of ports) stopRedis.push(await startRedisOn(port));
  });
  after(async () => {
    for (const stop of stopRedis) await stop();
    process.stderr.write(
      `docs commands: ${shown.length} shown, ${all.length} distinct; run here ${toRun.length} (${servers.length} servers, ` +
        `${clients.length} against them), run by ${CI_SCRIPT} ${byCi.length}, marked not run in CI ${marked.length}\n`,
    );
  });

  it('finds the commands of every page, and every "not run in CI" mark names a command its page shows', () => {
    assert.ok(shown.length > 0, 'no command found in the docs');
    for (const mark of marks) {
      const onPage = shown.some((c) => c.file === mark.file && splitChain(c.text).includes(mark.text));
      assert.ok(onPage, `${mark.file}:${mark.line}: marks \`${mark.text}\`, which the page does not show`);
    }
    for (const text of EXPECTED_OUTPUT.keys())
      assert.ok(units.has(text), `an expected output is kept for \`${text}\`, which no page shows`);
  });

  // The servers share ports (8080, 9090): one at a time, each with the commands that talk to its ports.
  it('the servers the docs show, one at a time, each with the commands run against it', async (t) => {
    const served = new Set<Unit>();
    for (const unit of servers)
      await t.test(`${where(unit)}: ${unit.text}`, async () => {
        const server = await startServer(unit.text, SERVER_START_MS);
        try {
          await checkUp(unit, server);
          const ports = Object.values(server.ready).filter((v): v is number => typeof v === 'number');
          for (const client of clients.filter(
            (c) => !served.has(c) && portsNamed(c.text).some((p) => ports.includes(p)),
          )) {
            served.add(client);
            await runClient(client, unit);
          }
        } finally {
          await server.stop();
        }
      });
    for (const client of clients)
      assert.ok(served.has(client), `${where(client)}: \`${client.text}\`: no command the docs show serves its port`);
  });

  describe('the rest, each to its end', { concurrency: availableParallelism() + 1 }, () => {
    for (const unit of plain)
      it(`${where(unit)}: ${unit.text}`, async () => {
        const out = await runToEnd(unit.text, COMMAND_TIMEOUT_MS);
        assert.equal(out.code, 0, fail(unit, `exited with ${String(out.code ?? out.signal)}`, out));
        const expected = EXPECTED_OUTPUT.get(unit.text);
        if (expected !== undefined) assert.match(out.stdout, expected, fail(unit, 'printed something else', out));
      });
  });
});

/** runClient runs `client` while `server` is up, and checks what it printed where the docs say. */
async function runClient(client: Unit, server: Unit): Promise<void> {
  const out = await runToEnd(client.text, COMMAND_TIMEOUT_MS);
  const how = `exited with ${String(out.code ?? out.signal)} while \`${server.text}\` ran`;
  assert.equal(out.code, 0, fail(client, how, out));
  const expected = EXPECTED_OUTPUT.get(client.text);
  if (expected !== undefined) assert.match(out.stdout, expected, fail(client, 'printed something else', out));
}

/** checkUp asserts that a server answers: `floodgate serve`'s admin /healthz with 200. */
async function checkUp(unit: Unit, server: Server): Promise<void> {
  const adminPort = server.ready['adminPort'];
  if (typeof adminPort !== 'number') return; // floodgate ratelimit: its ready line is printed once it listens.
  const reply = await fetch(`http://127.0.0.1:${adminPort}/healthz`);
  assert.equal(reply.status, 200, `${where(unit)}: \`${unit.text}\` is up, but /healthz answered ${reply.status}`);
}
