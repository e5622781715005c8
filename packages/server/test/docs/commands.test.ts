import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ciRunCommands, extractCommands, notRunMarks, runByCi, splitChain } from './commands.js';
import { redisPortsNamed } from './redis.js';

const texts = (markdown: string): string[] => extractCommands('page.md', markdown).map((c) => `${c.line}: ${c.text}`);

describe('extractCommands', () => {
  it('takes each command line of sh, bash and shell blocks, joining continued lines and dropping comments and prompts', () => {
    const page = [
      'Run:',
      '',
      '```sh',
      '# a comment',
      'npm ci && npm start   # the gateway',
      '$ curl -i \\',
      '    http://127.0.0.1:8080/',
      '```',
      '',
      '```bash',
      'echo two',
      '```',
    ].join('\n');
    assert.deepEqual(texts(page), [
      '5: npm ci && npm start   # the gateway',
      '6: curl -i http://127.0.0.1:8080/',
      '11: echo two',
    ]);
  });

  it('takes only the prompted lines of a console block, and nothing from other languages', () => {
    const page = [
      '```console',
      '$ floodgate --version',
      '0.1.0',
      '```',
      '```yaml',
      'npm: start',
      '```',
      '```ts',
      'node x',
      '```',
    ];
    assert.deepEqual(texts(page.join('\n')), ['2: floodgate --version']);
  });

  it('takes inline spans that start with a program, across a line break, but not a bare subcommand name', () => {
    const page = [
      'See `floodgate serve`, run `floodgate check a.yaml`, or `npm run pack:tarball -w',
      'floodgate`; `--rounds 5` and `routes` are not commands, nor is `npm` alone, nor `floodgate ÷ this`.',
      '',
      '| `npm run bench` | x |',
    ].join('\n');
    assert.deepEqual(texts(page), [
      '1: floodgate check a.yaml',
      '1: npm run pack:tarball -w floodgate',
      '4: npm run bench',
    ]);
  });

  it('does not read commands inside HTML comments', () => {
    assert.deepEqual(texts('<!-- not run in CI:\n`npm run bench`: slow\n-->\n'), []);
  });
});

describe('notRunMarks', () => {
  it('reads each `command`: reason line of a "not run in CI" comment', () => {
    const page = 'x\n<!-- not run in CI:\n`npm run bench`: a benchmark\n`apt-get install -y wrk`: root\n-->\n';
    assert.deepEqual(
      notRunMarks('p.md', page).map((m) => [m.line, m.text, m.reason]),
      [
        [3, 'npm run bench', 'a benchmark'],
        [4, 'apt-get install -y wrk', 'root'],
      ],
    );
  });

  it('refuses a line without a reason, and a comment left open', () => {
    assert.throws(
      () => notRunMarks('p.md', '<!-- not run in CI:\n`npm run bench`\n-->'),
      /p\.md:2: .*`command`: reason/,
    );
    assert.throws(() => notRunMarks('p.md', '<!-- not run in CI:\n`a b`: c\n'), /not closed/);
  });
});

describe('chains, CI and Redis', () => {
  it('splits a chain on && and drops a trailing comment', () => {
    assert.deepEqual(splitChain('npm ci && npm test   # the suite'), ['npm ci', 'npm test']);
  });

  it('counts a command as run by CI when its script runs it as written, flags after it allowed', () => {
    const ci = ciRunCommands('#!/bin/sh\n# npm run bench\nnpm ci --no-audit\nnpm test\n');
    assert.equal(runByCi('npm ci', ci), true);
    assert.equal(runByCi('npm test', ci), true);
    assert.equal(runByCi('npm run bench', ci), false);
    assert.equal(runByCi('npm t', ci), false);
  });

  it('finds the Redis a command names by flag or URL', () => {
    assert.deepEqual(redisPortsNamed('floodgate ratelimit -c r.yaml --redis 127.0.0.1:6380'), [6380]);
    assert.deepEqual(redisPortsNamed('REDIS_URL=redis://:pw@127.0.0.1:6390 x'), [6390]);
    assert.deepEqual(redisPortsNamed('curl http://127.0.0.1:8080/'), []);
  });
});
