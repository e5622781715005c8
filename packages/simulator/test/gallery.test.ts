import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { CHART_DIR, galleryFiles, ROOT } from '../scripts/gallery.js';

const REFRESH = 'run `npm run gallery -w floodgate-simulator` and commit what it writes';

describe('the gallery in docs/', () => {
  it('is what the simulator draws from the gallery scenarios today', async () => {
    const files = await galleryFiles();
    assert.ok(files.size >= 10, `a page and its charts: ${files.size} files`);
    for (const [path, content] of files) {
      const name = relative(ROOT, path);
      let checkedIn: string;
      try {
        checkedIn = await readFile(path, 'utf8');
      } catch {
        assert.fail(`${name} is missing: ${REFRESH}`);
      }
      assert.ok(checkedIn === content, `${name} is out of date: ${REFRESH}`);
    }
    const charts = (await readdir(CHART_DIR, { recursive: true })).filter((f) => f.endsWith('.svg'));
    const stale = charts.map((f) => join(CHART_DIR, f)).filter((path) => !files.has(path));
    assert.deepEqual(
      stale.map((p) => relative(ROOT, p)),
      [],
      `charts no scenario draws any more: ${REFRESH}`,
    );
  });
});
