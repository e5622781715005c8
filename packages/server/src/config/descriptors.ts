/**
 * The rateLimitService section's Envoy descriptor files: read relative to the config file, parsed
 * by the decision service's own reader, and every mistake reported as a config problem with the
 * descriptor file's line, like any other mistake in the config.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import {
  mergeDescriptorConfigs,
  parseDescriptorConfig,
  type ConfigError as DescriptorError,
  type DescriptorConfig,
  type DomainSpec,
} from '../ratelimit/service/config.js';
import { Locator, type ConfigProblem } from './problems.js';
import type { GatewayConfig } from './schema.js';

/** DescriptorFiles are the domains a config's rateLimitService serves, and the files they came from. */
export interface DescriptorFiles {
  /** The absolute paths of the descriptor files, in config order (empty without a rateLimitService). */
  readonly files: readonly string[];
  readonly domains: readonly DomainSpec[];
}

const HINT = "fix the descriptor file (Envoy's ratelimit config: domain, descriptors, key, value, rate_limit)";

/**
 * loadDescriptorFiles returns the domains of `config.rateLimitService.descriptors` (none without the
 * section), or every problem found in those files. `configText` is the config file's text, so that
 * an unreadable file is placed on its line in the config.
 */
export async function loadDescriptorFiles(
  config: GatewayConfig,
  configFile: string,
  configText: string,
): Promise<DescriptorFiles | { problems: ConfigProblem[] }> {
  const section = config.rateLimitService;
  if (section === undefined) return { files: [], domains: [] };
  const files = section.descriptors.map((p) => resolve(dirname(configFile), p));
  const problems: ConfigProblem[] = [];
  const parsed: DescriptorConfig[] = [];
  for (const [i, file] of files.entries()) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      const locator = Locator.ofText(configFile, configText);
      problems.push(
        locator.problem(
          ['rateLimitService', 'descriptors', i],
          `cannot read the descriptor file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
          'give a path (relative to this config file) of a readable Envoy descriptor file',
        ),
      );
      continue;
    }
    const result = parseDescriptorConfig(text, file);
    if ('errors' in result) problems.push(...result.errors.map(problemOf));
    else parsed.push(result.config);
  }
  if (problems.length > 0) return { problems };
  const merged = mergeDescriptorConfigs(parsed);
  if ('errors' in merged)
    return {
      problems: merged.errors.map((e) => ({ ...problemOf(e), hint: 'define each domain in one descriptor file only' })),
    };
  return { files, domains: merged.config.domains };
}

function problemOf(e: DescriptorError): ConfigProblem {
  return { file: e.source, line: e.line, column: e.column, path: e.path, message: e.message, hint: HINT };
}
