/**
 * Writes docs/gateway-config.md from the config schema: every key with its type, default, allowed
 * values and description, so that the reference never says something the schema does not.
 * `npm run docs:config -w floodgate-server` (or `--check`: exit 1 when the committed file differs).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { configDocs } from '../src/config/docs.js';

const target = fileURLToPath(new URL('../../../docs/gateway-config.md', import.meta.url));
const text = configDocs();
if (process.argv.includes('--check')) {
  const committed = readFileSync(target, 'utf8');
  if (committed !== text) {
    process.stderr.write('docs/gateway-config.md is out of date: run npm run docs:config -w floodgate-server\n');
    process.exit(1);
  }
} else {
  writeFileSync(target, text);
  process.stdout.write(`wrote ${target}\n`);
}
