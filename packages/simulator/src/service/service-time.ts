import type { ServiceTimeSpec } from './spec.js';

/** The standard normal's 99th percentile. */
const Z99 = 2.3263478740408408;

/**
 * ServiceTime turns a uniform draw into a service time of one distribution: `drawMs(u)` for `u`
 * in (0, 1) is the distribution's quantile at `u`, so one draw per call gives that call's time
 * under whatever distribution is in force when it starts.
 */
export class ServiceTime {
  /** The lognormal's σ (0 otherwise). */
  private readonly sigma: number;

  /** Creates the sampler of `spec` (checked: a lognormal's p99 lies above its mean, within 14.9 ×). */
  constructor(readonly spec: ServiceTimeSpec) {
    this.sigma = spec.distribution === 'lognormal' ? lognormalSigma(spec.meanMs, spec.p99Ms) : 0;
  }

  /** meanMs returns the mean service time, in ms: what the capacity is reckoned from. */
  get meanMs(): number {
    return this.spec.meanMs;
  }

  /** drawMs returns the service time, in ms, at quantile `u` (in (0, 1)). */
  drawMs(u: number): number {
    const mean = this.spec.meanMs;
    switch (this.spec.distribution) {
      case 'constant':
        return mean;
      case 'exponential':
        return -mean * Math.log(1 - u);
      case 'lognormal':
        return mean * Math.exp(this.sigma * inverseNormal(u) - (this.sigma * this.sigma) / 2);
    }
  }
}

/**
 * lognormalSigma returns the σ of the lognormal with mean `meanMs` whose 99th percentile is
 * `p99Ms`: with μ = ln(mean) - σ²/2, p99 = e^(μ + z99·σ), so σ²/2 - z99·σ + ln(p99 / mean) = 0,
 * whose smaller root is taken (the larger one puts most of the mass near zero).
 */
export function lognormalSigma(meanMs: number, p99Ms: number): number {
  const c = Math.log(p99Ms / meanMs);
  return Z99 - Math.sqrt(Math.max(0, Z99 * Z99 - 2 * c));
}

const A = [
  -3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1,
  2.506628277459239,
] as const;
const B = [
  -5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1,
] as const;
const C = [
  -7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968,
  2.938163982698783,
] as const;
const D = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416] as const;
const P_LOW = 0.02425;

/**
 * inverseNormal returns the standard normal quantile at `p` (in (0, 1)), by Peter Acklam's
 * rational approximation (relative error below 1.2e-9): ample for drawing service times.
 */
export function inverseNormal(p: number): number {
  if (p < P_LOW) return tail(p);
  if (p > 1 - P_LOW) return -tail(1 - p);
  const q = p - 0.5;
  const r = q * q;
  const num = (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q;
  const den = ((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1;
  return num / den;
}

/** The lower tail, p below P_LOW. */
function tail(p: number): number {
  const q = Math.sqrt(-2 * Math.log(p));
  return (
    (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5]) /
    ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1)
  );
}
