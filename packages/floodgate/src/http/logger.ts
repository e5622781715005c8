/** Logger receives floodgate's one-time warnings about misconfiguration and store failures. */
export interface Logger {
  /** warn reports a problem an operator should fix; `detail` is the underlying error, if any. */
  warn(message: string, detail?: unknown): void;
}

/** consoleLogger is the default {@link Logger}: it writes to `console.warn`. */
export const consoleLogger: Logger = Object.freeze({
  warn: (message: string, detail?: unknown): void => {
    if (detail === undefined) console.warn(message);
    else console.warn(message, detail);
  },
});
