/**
 * Express's `trust proxy` setting and floodgate's `trustProxy` option: which one finds the client
 * address of an Express request, decided once per app, and refused loudly when they disagree.
 */
import { FloodgateError, describeValue } from '../../core/errors.js';
import type { TrustProxyOptions } from '../client-ip.js';

/**
 * TrustSource says who finds the client address of an app's requests: floodgate's own resolver,
 * Express's `req.ip`, or nobody because the two settings disagree (the error says how to fix it).
 */
export type TrustSource = 'floodgate' | 'express' | FloodgateError;

/**
 * trustSourceOf returns who finds the client address, given the app's `trust proxy` setting and
 * floodgate's `trustProxy` option:
 * - the app trusts no proxy (Express's default): floodgate's option decides, as on any adapter;
 * - the app trusts proxies and floodgate's option is not given: Express's `req.ip`;
 * - both are given: they must say the same (the same hop count, or the same list of addresses and
 *   ranges), else the error names both and how to fix it.
 */
export function trustSourceOf(appSetting: unknown, options: TrustProxyOptions): TrustSource {
  if (!appTrusts(appSetting)) return 'floodgate';
  const own = options.trustProxy;
  if (own === undefined) return 'express';
  if (sameTrust(appSetting, own)) return 'floodgate';
  return new FloodgateError(
    'INVALID_OPTION',
    `trustProxy is ${describeValue(own)} but the Express app's "trust proxy" setting is ${describeValue(appSetting)}: ` +
      "they disagree on which proxies to believe. Remove floodgate's trustProxy to key by Express's req.ip, or give both the same value",
    'trustProxy',
  );
}

/** Whether an Express `trust proxy` setting trusts any proxy (false, 0, undefined and an empty list trust none). */
function appTrusts(setting: unknown): boolean {
  if (setting === undefined || setting === null || setting === false || setting === 0 || setting === '') return false;
  return !(Array.isArray(setting) && setting.length === 0);
}

/** Whether floodgate's `trustProxy` says what Express's setting says. */
function sameTrust(appSetting: unknown, own: NonNullable<TrustProxyOptions['trustProxy']>): boolean {
  if (typeof own === 'number' || own === false) return appSetting === own;
  const theirs =
    typeof appSetting === 'string'
      ? appSetting.split(',')
      : Array.isArray(appSetting)
        ? (appSetting as unknown[])
        : undefined;
  if (theirs === undefined) return false;
  const a = theirs.map((s) => String(s).trim()).sort();
  const b = own.map((s) => s.trim()).sort();
  return a.length === b.length && a.every((s, i) => s === b[i]);
}
