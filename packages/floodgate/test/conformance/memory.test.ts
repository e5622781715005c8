import { MemoryStore } from '../../src/index.js';
import { runConformance } from './suite.js';

runConformance('memory store', (algorithm) => new MemoryStore().bind(algorithm));
runConformance('memory store', (algorithm) => new MemoryStore().bind(algorithm), { baseMs: 1_728_000_000_000 });
