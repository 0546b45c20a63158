// `npm run bench`: runs every bench/*.bench.mjs in order (or those named on the command
// line) and prints their reports. Each workload is reported next to a floor measured in
// the same run, as a ratio, because the machines are shared and noisy.
//
// Each bench file runs in a process of its own, so that what one area left behind (its
// heap, its threads, the reference's modules) does not weigh on the next one's figures
// (issue 13: the store bench's SQLite event-loop p99 read 2.05-2.22 ms after the artifacts
// bench in one process, 1.34-1.74 ms alone). A file that fails fails the run, after the
// others ran.
import { readdirSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { spawnSync } from 'node:child_process'

const dir = dirname(fileURLToPath(import.meta.url))
const self = fileURLToPath(import.meta.url)

if (process.argv[2] === '--file') {
  const mod = await import(pathToFileURL(join(dir, process.argv[3])).href)
  if (typeof mod.default === 'function') await mod.default()
} else {
  const only = process.argv.slice(2)
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.bench.mjs'))
    .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
    .sort()
  const failed = []
  for (const f of files) {
    console.log(`\n## ${f}`)
    const r = spawnSync(process.execPath, [...process.execArgv, self, '--file', f], { stdio: 'inherit' })
    if (r.status !== 0) failed.push(`${f} (${r.signal ?? `exit ${r.status}`})`)
  }
  if (failed.length > 0) {
    console.error(`\nbench failed: ${failed.join(', ')}`)
    process.exitCode = 1
  }
}
