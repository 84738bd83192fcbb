// The application clock of the adapter's process, set by reapcheck's `clock`
// requests. JavaScript's Date reads it (Date.now() and `new Date()`), at
// Date's millisecond resolution; timers keep running on the event loop's
// own clock, so nothing waits on it and nothing hangs.

const RealDate = Date

/** The scenario clock: microseconds since the epoch, or null (the real clock). */
export const clock = {
  micros: null,

  /** Sets the clock to an RFC 3339 instant with up to six fractional digits, in UTC. */
  set (iso) {
    const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?Z$/.exec(iso)
    if (!m) throw new Error(`clock: ${iso} is not an RFC 3339 UTC instant`)
    const wholeSecondMs = RealDate.parse(`${m[1]}Z`)
    this.micros = BigInt(wholeSecondMs) * 1000n + BigInt((m[2] ?? '').padEnd(6, '0'))
  },

  /** Milliseconds since the epoch, as Date.now() gives them. */
  ms () {
    if (this.micros === null) return RealDate.now()
    const ms = this.micros / 1000n // BigInt division truncates: floor it for instants before 1970
    return Number(this.micros % 1000n < 0n ? ms - 1n : ms)
  },

  /** The clock as RFC 3339 with six fractional digits, read through Date. */
  iso () {
    const d = new Date()
    const sub = this.micros === null ? 0n : ((this.micros % 1000n) + 1000n) % 1000n
    return d.toISOString().replace(/\.(\d{3})Z$/, (_, ms) => `.${ms}${String(sub).padStart(3, '0')}Z`)
  }
}

/** Replaces the global Date with one that reads `clock` (no fake timers). */
export function installAppClock () {
  class ScenarioDate extends RealDate {
    constructor (...args) {
      if (args.length === 0) super(clock.ms())
      else super(...args)
    }

    static now () {
      return clock.ms()
    }
  }
  globalThis.Date = ScenarioDate
}
