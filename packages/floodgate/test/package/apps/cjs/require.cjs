// Plain CommonJS JavaScript: require() of every entry point, as a user without TypeScript writes it.
'use strict';
/* global require */ // CommonJS on purpose: this file is what a user without ESM writes.
/* eslint-disable @typescript-eslint/no-require-imports */
const { FloodgateError, Limiter, tokenBucket } = require('floodgate');
const { byIp } = require('floodgate/http');
const { floodgateExpress } = require('floodgate/http/express');
const { ioredisAdapter } = require('floodgate/redis');
const { ClusterStore } = require('floodgate/cluster');

let code = '';
try {
  new Limiter({ policy: tokenBucket({ capacity: 1, refillPerSecond: 1 }) }).consumeSync('k', { cost: -1 });
} catch (error) {
  if (error instanceof FloodgateError) code = error.code;
}
const limiter = new Limiter({ policy: tokenBucket({ capacity: 1, refillPerSecond: 1 }) });
const allowed = [limiter.consumeSync('k').allowed, limiter.consumeSync('k').allowed];
const kinds = [typeof byIp, typeof floodgateExpress, typeof ioredisAdapter, typeof ClusterStore];
// Every entry point loads the CommonJS build, never the ES modules through require(esm).
const entries = ['floodgate', 'floodgate/http', 'floodgate/http/express', 'floodgate/redis', 'floodgate/cluster'];
const builds = [...new Set(entries.map((name) => /\/dist\/(cjs|esm)\//.exec(require.resolve(name))?.[1]))];
console.log(JSON.stringify({ allowed, code, kinds, builds }));
