/** Hostile request targets for the path normaliser's fuzzing (path.test.ts, path-nginx.test.ts). */
import fc from 'fast-check';
import { anyText, hostileText } from '../../../floodgate/test/support/hostile.js';

const pathPiece = fc.oneof(
  fc.constantFrom('/', '//', '/./', '/../', '.', '..', '%2e', '%2E%2e', '?', '#', ';x=1', '\\', '%5c', '%2f'),
  fc.constantFrom('a', 'login', '%6c', '%41', '~', '%7e', '%00', '%zz', '%', '%C3%A9', '%C0%AF', '%E9', 'é', '😀'),
  hostileText(3),
);
/** hostileTarget returns targets, mostly starting with `/` so that the normaliser reads them. */
export const hostileTarget = fc.oneof(
  { weight: 6, arbitrary: fc.array(pathPiece, { maxLength: 30 }).map((p) => '/' + p.join('')) },
  { weight: 1, arbitrary: anyText().map((t) => '/' + t) },
  { weight: 1, arbitrary: anyText() },
);
