/**
 * The API reference is generated from the TSDoc by TypeDoc (`npm run docs:api -w floodgate`, into
 * packages/floodgate/dist/api). This test converts every entry point the package exports, as that command does, and
 * fails on any exported class, interface, function, variable, type or enum without documentation.
 * A second test holds the filter to TypeDoc's message format, so that it cannot pass by missing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Application, Logger, LogLevel, TSConfigReader, TypeDocReader } from 'typedoc';

const PACKAGE_DIR = fileURLToPath(new URL('../../', import.meta.url));

/** A logger that keeps TypeDoc's warnings and errors instead of printing them. */
class KeptLog extends Logger {
  readonly messages: string[] = [];
  override log(message: string, level: LogLevel): void {
    if (level >= LogLevel.Warn) this.messages.push(message);
  }
}

/**
 * isUndocumentedExport tells whether a TypeDoc warning is about an export itself (`module.Name`),
 * rather than about one of its members: members are held to TSDoc by review, not by this test.
 */
function isUndocumentedExport(message: string): boolean {
  const found = /^(\S+) \((\w+)\), defined in .* does not have any documentation/.exec(message);
  return found !== null && found[1]!.split('.').length === 2;
}

describe('the API reference', { timeout: 180_000 }, () => {
  it('documents every export of every entry point', async () => {
    const previous = process.cwd();
    process.chdir(PACKAGE_DIR);
    try {
      const app = await Application.bootstrap({ options: 'typedoc.json' }, [new TypeDocReader(), new TSConfigReader()]);
      const log = new KeptLog();
      app.logger = log;
      const project = await app.convert();
      assert.ok(project, `TypeDoc converted the entry points: ${log.messages.join('\n')}`);
      assert.ok(project.children && project.children.length >= 8, 'one module per entry point');
      app.validate(project);
      assert.deepEqual(log.messages.filter(isUndocumentedExport), []);
    } finally {
      process.chdir(previous);
    }
  });

  it("tells an undocumented export from an undocumented member, in TypeDoc's words", () => {
    const said = (name: string, kind: string): string =>
      `${name} (${kind}), defined in floodgate/src/x.ts, does not have any documentation`;
    assert.equal(isUndocumentedExport(said('index.tokenBucket', 'Function')), true);
    assert.equal(isUndocumentedExport(said('http/adapters/node.NodeMiddleware', 'TypeAlias')), true);
    assert.equal(isUndocumentedExport(said('redis.IoredisClient.eval', 'CallSignature')), false);
    assert.equal(isUndocumentedExport('Failed to resolve link to "byRoute"'), false);
  });
});
