// Drives one real Guava RateLimiter (31.x) from a script on stdin, answering one line per command,
// for floodgate's differential tests. It lives in Guava's own package, as Guava's RateLimiterTest
// does, to reach the two things the public API hides: the constructors that take a
// SleepingStopwatch (so time is a fake that moves only when told) and reserve(permits), which
// returns a wait without sleeping. Nothing else of Guava is touched: every wait below is computed
// by Guava's own SmoothRateLimiter code.
//
// Commands (one per line; rates and factors as Java's Double.parseDouble reads them):
//   bursty RATE MAX_BURST_SECONDS        new SmoothBursty(stopwatch, maxBurstSeconds).setRate(rate)
//   warm RATE WARMUP_MICROS COLD_FACTOR  RateLimiter.create(rate, warmup, MICROSECONDS, coldFactor, stopwatch)
//   acquire PERMITS                      -> the µs acquire slept (time moves on by it)
//   try PERMITS TIMEOUT_MICROS           -> "true µs" (slept, time moves on) or "false"
//   reserve PERMITS                      -> the µs to wait (no sleep: time stays)
//   sleep MICROS                         -> "ok" (time moves on)
//   setRate RATE                         -> "ok"
//   rate                                 -> getRate()
package com.google.common.util.concurrent;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.util.concurrent.TimeUnit;

final class FloodgateGuavaDriver {
  /** Time that moves only when slept on; remembers the last sleep. */
  static final class FakeStopwatch extends RateLimiter.SleepingStopwatch {
    long micros = 0;
    long lastSleepMicros = 0;

    @Override
    protected long readMicros() {
      return micros;
    }

    @Override
    protected void sleepMicrosUninterruptibly(long sleep) {
      lastSleepMicros = sleep;
      if (sleep > 0) micros += sleep;
    }
  }

  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    PrintStream out = new PrintStream(System.out, false);
    FakeStopwatch time = new FakeStopwatch();
    RateLimiter limiter = null;
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      String[] w = line.trim().split(" ");
      switch (w[0]) {
        case "bursty":
          time = new FakeStopwatch();
          limiter = new SmoothRateLimiter.SmoothBursty(time, Double.parseDouble(w[2]));
          limiter.setRate(Double.parseDouble(w[1]));
          out.println("ok");
          break;
        case "warm":
          time = new FakeStopwatch();
          limiter = RateLimiter.create(Double.parseDouble(w[1]), Long.parseLong(w[2]), TimeUnit.MICROSECONDS,
              Double.parseDouble(w[3]), time);
          out.println("ok");
          break;
        case "acquire":
          limiter.acquire(Integer.parseInt(w[1]));
          out.println(time.lastSleepMicros);
          break;
        case "try":
          boolean granted = limiter.tryAcquire(Integer.parseInt(w[1]), Long.parseLong(w[2]), TimeUnit.MICROSECONDS);
          out.println(granted ? "true " + time.lastSleepMicros : "false");
          break;
        case "reserve":
          out.println(limiter.reserve(Integer.parseInt(w[1])));
          break;
        case "sleep":
          time.micros += Long.parseLong(w[1]);
          out.println("ok");
          break;
        case "setRate":
          limiter.setRate(Double.parseDouble(w[1]));
          out.println("ok");
          break;
        case "rate":
          out.println(limiter.getRate());
          break;
        default:
          out.println("error unknown command " + w[0]);
      }
      out.flush();
    }
  }
}
