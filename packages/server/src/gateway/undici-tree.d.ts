// The type of the undici file that forwarding.ts loads directly: undici's table of well-known
// header names, which its own response parsing reads names with.
declare module 'undici/lib/core/tree.js' {
  /** tree finds the lower-case form of a well-known header name given in any case; null for another name. */
  export const tree: { lookup(name: Uint8Array): string | null };
}
