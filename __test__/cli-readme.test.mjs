// The README's quick start is what CI runs, word for word, and the command-line page
// (docs/cli.md) documents every command the program knows.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const readme = readFileSync(join(root, 'README.md'), 'utf8')

function section(title) {
  const start = readme.indexOf(`\n## ${title}\n`)
  assert.notEqual(start, -1, `README has no "## ${title}" section`)
  const rest = readme.slice(start + 1)
  const next = rest.indexOf('\n## ', 4)
  return next === -1 ? rest : rest.slice(0, next)
}

test('the quick start is the first section, on the first screen, with two commands: install and demo, then the tests', () => {
  const titles = [...readme.matchAll(/^## (.+)$/gm)].map((m) => m[1])
  assert.equal(titles[0], 'Quick start')
  const block = /```sh\n([\s\S]*?)```/.exec(section('Quick start'))
  assert.ok(block, 'the quick start has a sh block')
  // The commands end within the first 40 lines of the README.
  assert.ok(readme.slice(0, readme.indexOf(block[0]) + block[0].length).split('\n').length <= 40, 'the quick start is not on the first screen')
  const commands = block[1].split('\n').filter((l) => l.trim() !== '').map((l) => l.replace(/\s+#.*$/, ''))
  assert.deepEqual(commands, ['npm ci && npm run demo', 'npm test'])
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  assert.match(pkg.scripts.demo, /prism-review\.mjs demo$/)
  // CI runs both exactly as written.
  const ci = readFileSync(join(root, '.ci', 'run'), 'utf8').split('\n')
  for (const c of commands) assert.ok(ci.includes(c), `.ci/run does not run "${c}" as written`)
  assert.ok(ci.indexOf(commands[0]) < ci.indexOf(commands[1]), 'the demo runs before the tests')
})

test('the command-line page documents every command of the help text', () => {
  const help = spawnSync(process.execPath, [join(root, 'bin', 'prism-review.mjs'), 'help'], { encoding: 'utf8' })
  assert.equal(help.status, 0)
  const commands = [...help.stdout.matchAll(/^ {2}([a-z]+) {2,}/gm)].map((m) => m[1])
  assert.deepEqual(commands, ['demo', 'review', 'status', 'approve', 'reject', 'log', 'serve', 'help'])
  assert.match(section('Command line'), /\(docs\/cli\.md\)/, 'the README links the command-line page')
  const doc = readFileSync(join(root, 'docs', 'cli.md'), 'utf8')
  for (const c of commands) assert.match(doc, new RegExp('^\\|.*`' + c + '[` ]', 'm'), `docs/cli.md does not document "${c}"`)
  for (const flag of [...help.stdout.matchAll(/^ {2}(?:-h, )?(--[a-z-]+)/gm)].map((m) => m[1])) {
    assert.ok(doc.includes(flag), `docs/cli.md does not mention ${flag}`)
  }
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  assert.equal(pkg.bin['prism-review'], 'bin/prism-review.mjs')
  assert.ok(pkg.files.includes('bin/'))
})
