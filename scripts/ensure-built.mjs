// Builds the release addon when it is missing or older than any Rust source, so that
// `npm test` in a fresh clone (after `npm install`) builds exactly once.
import { execSync } from 'node:child_process'
import { readdirSync, statSync, existsSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

function newest(dir) {
  let t = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name)
    if (entry.isDirectory()) t = Math.max(t, newest(p))
    else t = Math.max(t, statSync(p).mtimeMs)
  }
  return t
}

const binary = readdirSync(root).find((f) => /^prism-review\..+\.node$/.test(f))
const sources = Math.max(
  newest(join(root, 'src')),
  ...['Cargo.toml', 'Cargo.lock', 'build.rs'].map((f) => statSync(join(root, f)).mtimeMs),
)
// binding.d.ts too: the JS type check (tsconfig.json) reads it.
const generated = ['binding.js', 'binding.d.ts'].every((f) => existsSync(join(root, f)))
const stale = !binary || !generated || statSync(join(root, binary)).mtimeMs < sources
if (stale || process.env.PRISM_FORCE_BUILD === '1') {
  console.log('prism-review: building the native addon (npm run build)…')
  execSync('npm run build', { cwd: root, stdio: 'inherit' })
} else {
  console.log(`prism-review: ${binary} is up to date`)
}
