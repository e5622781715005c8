/**
 * The API reference is generated from the TSDoc by TypeDoc (`npm run docs:api -w floodgate`, into
 * packages/floodgate/dist/api). This test converts every entry point the package exports, as that
 * command does, and fails on any warning: an export or a member without documentation, a link that
 * does not resolve, or a type the reference shows that it does not document.
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

describe('the API reference', { timeout: 180_000 }, () => {
  it('documents every export and member of every entry point, its links resolved: no warning', async () => {
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
      assert.deepEqual(log.messages, []);
    } finally {
      process.chdir(previous);
    }
  });
});
