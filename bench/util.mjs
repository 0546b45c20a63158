// Small timing helpers shared by the benchmarks.
import { performance } from 'node:perf_hooks'

/** Median milliseconds of `fn` over `runs` runs after `warmup` runs. */
export async function medianMs(fn, { runs = 7, warmup = 2 } = {}) {
  for (let i = 0; i < warmup; i++) await fn()
  const times = []
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now()
    await fn()
    times.push(performance.now() - t0)
  }
  times.sort((a, b) => a - b)
  return times[Math.floor(times.length / 2)]
}

/** Percentile `p` (0..100) of a numeric array. */
export function percentile(values, p) {
  const s = [...values].sort((a, b) => a - b)
  if (s.length === 0) return NaN
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}

export function fmt(n, digits = 2) {
  return Number.isFinite(n) ? n.toFixed(digits) : String(n)
}
