// Small timing helpers shared by the benchmarks.
import { performance, monitorEventLoopDelay } from 'node:perf_hooks'
import { readFileSync } from 'node:fs'

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

/**
 * Sample the event-loop delay until `stop()`, which answers `{ p99, max, samples, stealMs }`
 * in ms (`stealMs`: the host's steal meanwhile, `hostSteal`).
 * Node's histogram records the time between runs of its `resolution` timer, the
 * interval itself included (an idle loop reads ~1.1 ms at a 1 ms resolution, ~10.1 ms at
 * 10 ms), so the delay is what it records less the resolution. `samples` 0: the loop never
 * turned while sampling (a workload whose every call settled at once, awaited in
 * sequence, never yields to timers), so there is no delay figure (`p99` is NaN).
 */
export function sampleLoopDelay(resolution = 1) {
  const h = monitorEventLoopDelay({ resolution })
  const steal = hostSteal()
  h.enable()
  return {
    stop() {
      h.disable()
      const stealMs = steal.stop()
      const delay = (ns) => Math.max(0, ns / 1e6 - resolution)
      if (h.count === 0) return { p99: NaN, max: NaN, samples: 0, stealMs }
      return { p99: delay(h.percentile(99)), max: delay(h.max), samples: h.count, stealMs }
    },
  }
}

/**
 * The machine's steal time so far, in ms summed over its CPUs: time a hypervisor ran
 * something else while one of this VM's CPUs had work (Linux's /proc/stat, in ticks of
 * USER_HZ = 100 per second, so 10 ms steps); NaN where it is not reported. On a shared VM
 * it is where many long event-loop stalls go: a stolen CPU shows in the guest as idle, or
 * as the running thread's own time (issue 13's notes).
 */
export function readSteal() {
  try {
    const cpu = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/)
    return cpu[0] === 'cpu' && cpu.length > 8 ? Number(cpu[8]) * 10 : NaN
  } catch {
    return NaN
  }
}

/** Steal from now until `stop()` (ms, all CPUs; NaN where not reported). */
export function hostSteal() {
  const start = readSteal()
  return { stop: () => readSteal() - start }
}

/** `; host steal <when> N ms (…)`, or nothing where steal is not reported. */
export function fmtSteal(ms, when = 'meanwhile') {
  return Number.isNaN(ms) ? '' : `; host steal ${when} ${fmt(ms, 0)} ms (all CPUs, 10 ms steps)`
}

/** The larger of two delay figures, either of which may be NaN (no sample). */
export function worseDelay(a, b) {
  if (Number.isNaN(a)) return b
  if (Number.isNaN(b)) return a
  return Math.max(a, b)
}

/** A delay figure in ms, or why there is none. */
export function fmtDelay(ms) {
  return Number.isNaN(ms) ? 'no sample (the loop never turned)' : `${fmt(ms, 2)} ms`
}
