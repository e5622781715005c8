import { pureStore } from '../support/pure-store.js';
import { runConformance } from './suite.js';

// The pure core: decide() and the algorithms' own peek/refund over a Map of Float64Arrays.
runConformance('pure core', pureStore);
// The same tables at epoch-scale times (a multiple of every window in them).
runConformance('pure core', pureStore, { baseMs: 1_728_000_000_000 });
