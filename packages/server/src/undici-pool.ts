/**
 * undici's Pool, loaded without the rest of undici. The package's entry point loads every part of
 * undici (fetch, WebSocket, caches, mocks, proxy agents, and more), about 1 MB of code that
 * `floodgate serve` parses at every start and never runs; the gateway and the decision service's
 * client need only a Pool with the request, stream and upgrade methods. This module loads the
 * Pool and the dispatcher API methods from undici's own files and attaches the methods as
 * undici's entry point does (`Object.assign(Dispatcher.prototype, api)`), which halves the
 * undici code in the bundle. The paths are undici's, not a public API: the version is pinned by
 * the lockfile, and the gateway's and the installed package's tests fail if a new version moves
 * them.
 */
import Dispatcher from 'undici/lib/dispatcher/dispatcher.js';
import api from 'undici/lib/api/index.js';
import Pool from 'undici/lib/dispatcher/pool.js';

Object.assign(Dispatcher.prototype, api);

export { Pool };
