/**
 * The config of how paths match routes: the stance on ambiguous spellings (gateway-wide under
 * `paths`, overridable by a route's `match.ambiguous`), and its compiled form.
 */
import * as z from 'zod';
import { AMBIGUITIES, ambiguityBit, type Ambiguity } from './normal-path.js';

/** stanceSchema is what to do with one kind of ambiguous spelling: refuse it with 400, or forward its normal form. */
export const stanceSchema = z.enum(['reject', 'normalise']);

/** Stance is `reject` or `normalise`. */
export type Stance = z.output<typeof stanceSchema>;

/** Each kind of ambiguous spelling and what its normal form makes of it, for the config reference. */
const KIND_TEXT: Record<Ambiguity, readonly [string, string]> = {
  encodedSlash: ['`%2F`', 'a `/`'],
  backslash: ['`\\` or `%5C`', 'a `/`'],
  pathParameter: ['a `;` parameter such as `/login;x=1`', 'dropped'],
  controlCharacter: ['an encoded control character such as `%00`', 'kept encoded'],
  invalidEscape: ['a `%` not followed by two hex digits', 'the `%` encoded as `%25`'],
  aboveRoot: ['a `..` segment climbing above `/`', 'dropped'],
  fragment: ['a `#` in the request target', 'it and all after it dropped'],
  invalidUtf8: ['escaped bytes that are not UTF-8, such as `%C0%AF`', 'kept encoded'],
};

const perKind = Object.fromEntries(
  AMBIGUITIES.map((kind) => {
    const [what, normal] = KIND_TEXT[kind];
    return [kind, stanceSchema.optional().describe(`The stance on ${what} (normalised: ${normal}; omitted: default).`)];
  }),
) as Record<Ambiguity, z.ZodOptional<typeof stanceSchema>>;

/**
 * ambiguousSchema is the stance on ambiguous spellings: one for every kind (`reject` or
 * `normalise`), or one per kind with a `default` for the kinds not named.
 */
export const ambiguousSchema = z.union(
  [
    stanceSchema,
    z.strictObject({
      default: stanceSchema
        .optional()
        .describe(
          "The stance on every kind not named (omitted: a route's falls back to the gateway's, the gateway's to reject).",
        ),
      ...perKind,
    }),
  ],
  {
    error: `expected reject, normalise, or { default, ${AMBIGUITIES.join(', ')} } each reject or normalise`,
  },
);

/** AmbiguousConfig is a checked stance on ambiguous spellings. */
export type AmbiguousConfig = z.output<typeof ambiguousSchema>;

/** pathsSchema is the gateway-wide `paths` section. */
export const pathsSchema = z.strictObject({
  ambiguous: ambiguousSchema
    .default('reject')
    .describe('The stance on ambiguous spellings for every route that does not state its own (default reject).'),
});

/**
 * rejectMaskOf returns the ambiguities (as a mask of `ambiguityBit`s) that are refused under
 * `route`'s stance, falling back kind by kind to `gateway`'s, then to `reject`.
 */
export function rejectMaskOf(gateway: AmbiguousConfig, route: AmbiguousConfig | undefined): number {
  let mask = 0;
  for (const kind of AMBIGUITIES) {
    const stance = stanceOf(route, kind) ?? stanceOf(gateway, kind) ?? 'reject';
    if (stance === 'reject') mask |= ambiguityBit(kind);
  }
  return mask;
}

function stanceOf(config: AmbiguousConfig | undefined, kind: Ambiguity): Stance | undefined {
  if (config === undefined || typeof config === 'string') return config;
  return config[kind] ?? config.default;
}
