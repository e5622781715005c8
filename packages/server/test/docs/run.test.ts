// The runner of the docs' commands: exit codes, a server's ready line, and stopping its whole process group.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { runToEnd, startServer } from './run.js';

/** Whether a process with this pid is running (a zombie no init has reaped yet counts as gone). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

describe('the docs commands runner', () => {
  it('runs a command in bash from the repository root, with node_modules/.bin on PATH', async () => {
    const out = await runToEnd('test -f package.json && command -v floodgate && echo ok; exit 3', 10_000);
    assert.equal(out.code, 3);
    assert.match(out.stdout, /node_modules\/\.bin\/floodgate\nok\n$/);
  });

  it('kills a command that outlives its time, with everything it started', async () => {
    const out = await runToEnd('sleep 30 & echo $!; wait', 500);
    assert.equal(out.signal, 'SIGKILL');
    const child = Number(out.stdout.trim());
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(alive(child), false, 'the sleep it started is gone too');
  });

  it('takes a server up at its ready line, and stops its process group with SIGTERM', async () => {
    const server = await startServer(
      `echo starting; sleep 30 & echo '{"msg":"listening","port":8080,"adminPort":9090,"child":'$!'}'; wait`,
      10_000,
    );
    assert.equal(server.ready['port'], 8080);
    const child = server.ready['child'] as number;
    assert.equal(alive(child), true);
    const out = await server.stop();
    assert.match(out.stdout, /^starting\n/);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(alive(child), false, 'SIGTERM reached the process it started');
  });

  it('says what a server printed when it exits before it is up', async () => {
    await assert.rejects(startServer('echo "bad config" >&2; exit 1', 10_000), (err: Error) => {
      assert.match(err.message, /exited \(1\) before it was up/);
      assert.match(err.message, /stderr:\nbad config/);
      return true;
    });
  });
});
