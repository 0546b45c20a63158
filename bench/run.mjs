// `npm run bench`: runs every bench/*.bench.mjs in order (or those named on the command
// line) and prints their reports. Each workload is reported next to a floor measured in
// the same run, as a ratio, because the machines are shared and noisy.
import { readdirSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const dir = dirname(fileURLToPath(import.meta.url))
const only = process.argv.slice(2)
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.mjs'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort()
for (const f of files) {
  console.log(`\n## ${f}`)
  const mod = await import(pathToFileURL(join(dir, f)).href)
  if (typeof mod.default === 'function') await mod.default()
}
