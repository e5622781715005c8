/**
 * Reloading on file changes, shared by `floodgate serve` and `floodgate ratelimit`: the folders of
 * the watched files are watched (editors often replace a file rather than write it), and a burst
 * of changes calls back once.
 */
import { watch } from 'node:fs';
import { basename, dirname } from 'node:path';

/** WATCH_DEBOUNCE_MS is how long the files must be quiet before a change reloads them: editors write a file in several steps. */
export const WATCH_DEBOUNCE_MS = 100;

/**
 * watchFiles watches the directories of the files `files()` names and calls `onChange` once per
 * burst of changes to any of them; it returns a function that stops watching. The watchers do not
 * keep the process alive.
 *
 * @example
 * const stop = watchFiles(() => ['ratelimit.yaml'], () => reload());
 */
export function watchFiles(files: () => readonly string[], onChange: () => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  const watchers = [...new Set(files().map((f) => dirname(f)))].map((dir) => {
    const watcher = watch(dir, (_event, changed) => {
      if (changed !== null && !files().some((f) => dirname(f) === dir && basename(f) === changed)) return;
      clearTimeout(timer);
      timer = setTimeout(onChange, WATCH_DEBOUNCE_MS);
    });
    watcher.unref();
    return watcher;
  });
  return () => {
    clearTimeout(timer);
    for (const w of watchers) w.close();
  };
}
