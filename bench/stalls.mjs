// Where the event loop's long stalls go (issue 13), Linux only: while a workload runs, a
// 1 ms timer notes every gap longer than `overMs` past its interval (default 5 ms;
// `PRISM_BENCH_STALL_MS`) and how the JS thread spent it, from
// /proc/self/task/<pid>/schedstat: running (our code: JS, completions, GC) or runnable but
// waiting for a CPU (the machine's scheduling: other processes, our own worker threads),
// and the host's steal over the same gaps (/proc/stat): on a shared VM a stolen CPU shows
// as the JS thread "running" or as idle, so that part is the hypervisor's, not ours.
import { readFileSync } from 'node:fs'
import { fmt, fmtSteal, readSteal } from './util.mjs'

const PATH = `/proc/self/task/${process.pid}/schedstat`

function read() {
  const [run, wait] = readFileSync(PATH, 'utf8').split(' ').map(Number)
  return { run, wait, steal: readSteal() }
}

/** Start sampling; `stop()` answers the split as one line, or undefined where schedstat is missing. */
export function sampleStalls(overMs = Number(process.env.PRISM_BENCH_STALL_MS ?? 5)) {
  try {
    read()
  } catch {
    return { stop: () => undefined }
  }
  const total = { n: 0, gap: 0, run: 0, wait: 0, steal: 0 }
  let prev = performance.now()
  let last = read()
  let on = true
  const tick = () => {
    const now = performance.now()
    const cur = read()
    if (now - prev > 1 + overMs) {
      total.n++
      total.gap += now - prev
      total.run += (cur.run - last.run) / 1e6
      total.wait += (cur.wait - last.wait) / 1e6
      total.steal += cur.steal - last.steal
    }
    prev = now
    last = cur
    if (on) setTimeout(tick, 1)
  }
  setTimeout(tick, 1)
  return {
    stop() {
      on = false
      return `${total.n} stalls > ${overMs} ms, ${fmt(total.gap, 0)} ms: JS thread running ${fmt(total.run, 0)} ms, waiting for a CPU ${fmt(total.wait, 0)} ms, idle ${fmt(Math.max(0, total.gap - total.run - total.wait), 0)} ms${fmtSteal(total.steal, 'over these gaps')}`
    },
  }
}
