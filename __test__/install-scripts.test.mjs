// The quick start's `npm ci` prints no install-scripts advisory (npm ≥ 11.16 lists every
// installed dependency whose install scripts `allowScripts` in package.json does not
// cover; npm 12 skips those scripts). Every installed package with an install script is
// reviewed in `allowScripts`, by name or name@version.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** The lifecycle scripts npm counts as install scripts for a registry package. */
const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall']

/**
 * Every package directory under `dir` (a node_modules), nested ones and scopes included.
 * @param {string} dir
 * @returns {string[]}
 */
function packagesUnder(dir) {
  if (!existsSync(dir)) return []
  const out = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue
    const path = join(dir, entry.name)
    if (entry.name.startsWith('@')) {
      out.push(...packagesUnder(path))
      continue
    }
    if (existsSync(join(path, 'package.json'))) out.push(path)
    out.push(...packagesUnder(join(path, 'node_modules')))
  }
  return out
}

/**
 * `name@version` of each installed package that runs an install script: one of
 * INSTALL_SCRIPTS, or node-gyp's implicit `install` when it has a binding.gyp and neither
 * `install` nor `preinstall`.
 */
function withInstallScripts() {
  const found = []
  for (const dir of packagesUnder(join(root, 'node_modules'))) {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
    const scripts = pkg.scripts ?? {}
    const gyp = existsSync(join(dir, 'binding.gyp')) && scripts.install === undefined && scripts.preinstall === undefined
    if (gyp || INSTALL_SCRIPTS.some((s) => typeof scripts[s] === 'string')) found.push(`${pkg.name}@${pkg.version}`)
  }
  return found
}

const allowScripts = () => JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).allowScripts ?? {}
const nameOf = (/** @type {string} */ p) => p.slice(0, p.lastIndexOf('@'))

test('every installed dependency with an install script is reviewed in allowScripts', () => {
  const allowed = allowScripts()
  const uncovered = withInstallScripts().filter((p) => !(nameOf(p) in allowed) && !(p in allowed))
  assert.deepEqual(uncovered, [], 'review each with `npm install-scripts approve <pkg>` or `npm install-scripts deny <pkg>`')
})

test('every allowScripts entry names an installed package with an install script (none stale)', () => {
  const found = withInstallScripts()
  const stale = Object.keys(allowScripts()).filter((k) => !found.some((p) => p === k || nameOf(p) === k))
  assert.deepEqual(stale, [], `installed packages with install scripts: ${JSON.stringify(found)}; drop stale entries with \`npm install-scripts prune\``)
})
