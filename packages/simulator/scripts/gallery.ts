/**
 * Makes the simulator's gallery, docs/simulator-gallery.md: each scenario of
 * scenarios/gallery/ run by the simulator, its summary in the page and its charts beside it in
 * docs/simulator-gallery/<scenario>/. The gallery test renders the same files and checks that
 * those checked in are current.
 *
 *   npm run gallery -w floodgate-simulator     # writes the gallery
 */
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { renderCharts, renderTextSummary, simulate } from '../src/index.js';

/** The repository's root. */
export const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
/** Where the gallery's scenarios are. */
export const SCENARIO_DIR = join(ROOT, 'packages/simulator/scenarios/gallery');
/** The gallery's page, and the folder of its charts. */
export const PAGE = join(ROOT, 'docs/simulator-gallery.md');
export const CHART_DIR = join(ROOT, 'docs/simulator-gallery');

const INTRO = `# The simulator's gallery

The classic comparisons, each drawn by the simulator from a scenario in
\`packages/simulator/scenarios/gallery/\`: the same numbers a run gives you. This page and its charts
are generated: \`npm run gallery -w floodgate-simulator\` writes them again, and a test
(\`packages/simulator/test/gallery.test.ts\`) fails when they are not current. The charts are
explained in the [simulator's README](../packages/simulator/README.md#charts).
`;

/**
 * galleryFiles returns every file of the gallery, by absolute path: the page, and each
 * scenario's charts. Same scenarios, same bytes.
 */
export async function galleryFiles(): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const sections = [INTRO];
  const names = (await readdir(SCENARIO_DIR)).filter((f) => f.endsWith('.yaml')).sort();
  for (const file of names) {
    const name = basename(file, '.yaml');
    const text = await readFile(join(SCENARIO_DIR, file), 'utf8');
    const result = await simulate(parseYaml(text));
    const charts = renderCharts(result);
    for (const chart of charts) files.set(join(CHART_DIR, name, `${chart.id}.svg`), chart.svg);
    const { title, description } = describe(text);
    const scenarioPath = relative(ROOT, join(SCENARIO_DIR, file));
    sections.push(
      [
        `## ${title}`,
        '',
        description,
        '',
        '```sh',
        `npx floodgate simulate --scenario ${scenarioPath} --out report/`,
        '```',
        '',
        '```text',
        renderTextSummary(result).trimEnd(),
        '```',
        '',
        ...charts.map((c) => `![${c.title}](simulator-gallery/${name}/${c.id}.svg)\n`),
      ].join('\n'),
    );
  }
  files.set(PAGE, sections.join('\n'));
  return files;
}

/** The scenario's leading comment: its first words up to a colon are the title, all of it the description. */
function describe(text: string): { title: string; description: string } {
  const comment: string[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('#')) break;
    comment.push(line.replace(/^# ?/, ''));
  }
  const all = comment.join(' ');
  const colon = all.indexOf(':');
  const rest = all.slice(colon + 1).trim();
  return { title: all.slice(0, colon), description: wrap(rest.charAt(0).toUpperCase() + rest.slice(1), 100) };
}

function wrap(text: string, width: number): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(line);
  return lines.join('\n');
}

/** writeGallery replaces the gallery's files with `files` (charts of scenarios since removed go too). */
export async function writeGallery(files: Map<string, string>): Promise<void> {
  await rm(CHART_DIR, { recursive: true, force: true });
  for (const [path, content] of files) {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, content);
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const files = await galleryFiles();
  await writeGallery(files);
  process.stdout.write(`wrote ${files.size} files: ${relative(ROOT, PAGE)} and ${relative(ROOT, CHART_DIR)}/\n`);
}
