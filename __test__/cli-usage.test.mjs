// The command line's edges as a new user meets them: help and version, what read-only
// commands may create (nothing), serve's token check, a repository without commits, a
// patch too large to review, progress and colours on a terminal. The CLI runs as a
// subprocess in real temporary git repositories.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { writeFileSync, readFileSync, readdirSync, existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { BIN, cli, json, assertOneLine, git, emptyRepo, repoWithFeature } from './cli-support.mjs'
import { createCodingPatchReviewManifest } from '../index.mjs'

const pkg = JSON.parse(readFileSync(join(BIN, '..', '..', 'package.json'), 'utf8'))

test('help lists --version, help --json is JSON with the same commands and options, --version prints the version', (t) => {
  const dir = repoWithFeature(t)
  const text = cli(dir, ['--help'])
  assert.equal(text.code, 0)
  assert.match(text.stdout, /^ {2}--version {2,}/m)
  const commands = [...text.stdout.matchAll(/^ {2}([a-z]+) {2,}/gm)].map((m) => m[1])
  const flags = [...text.stdout.matchAll(/^ {2}(?:-h, )?(--[a-z-]+)/gm)].map((m) => m[1])
  for (const args of [['help', '--json'], ['--json', 'help'], ['--help', '--json'], ['review', '--help', '--json']]) {
    const r = cli(dir, args)
    assert.equal(r.code, 0, args.join(' '))
    const doc = JSON.parse(r.stdout)
    assert.equal(doc.name, 'prism-review')
    assert.equal(doc.version, pkg.version)
    assert.deepEqual(
      doc.commands.map((c) => c.name),
      commands,
    )
    assert.deepEqual(
      doc.options.map((o) => o.flag.replace(/^-h, /, '')),
      flags,
    )
    assert.ok(doc.options.find((o) => o.flag === '--check-timeout').commands.includes('review'))
    assert.deepEqual(
      doc.exitCodes.map((e) => e.code),
      [0, 1, 2, 130, 143],
    )
  }
  assert.equal(cli(dir, ['--version']).stdout, `${pkg.version}\n`)
  assert.deepEqual(JSON.parse(cli(dir, ['--json', '--version']).stdout), { name: 'prism-review', version: pkg.version })
})

function listing(dir) {
  return readdirSync(dir, { recursive: true })
    .filter((f) => !String(f).startsWith('.git'))
    .sort()
}

test('status, log, approve and reject create nothing: a mistyped --db is an error, a missing default database is state none', (t) => {
  const dir = repoWithFeature(t)
  const before = listing(dir)
  for (const args of [
    ['status', '--db', '.prism/reveiw.db'],
    ['log', '--db', 'no/such/dir/review.db'],
    ['status', '--json', '--db', 'typo.db'],
    ['approve', '--db', 'typo.db'],
  ]) {
    const r = cli(dir, args)
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
    assertOneLine(r.stderr)
    assert.match(r.stderr, /no database at .*: check --db/)
    assert.equal(r.stdout, '')
  }
  assert.deepEqual(listing(dir), before)

  // No review yet anywhere: state none, and still nothing created.
  const none = json(dir, ['status', '--base', 'main'])
  assert.equal(none.state, 'none')
  assert.equal(cli(dir, ['status', '--require', 'none']).code, 0)
  assert.equal(json(dir, ['log', '--base', 'main']).state, 'none')
  const refused = cli(dir, ['approve', '--base', 'main'])
  assert.equal(refused.code, 1)
  assertOneLine(refused.stderr)
  assert.match(refused.stderr, /no review for feature over main: run `prism-review review` first/)
  assert.deepEqual(listing(dir), before)
  assert.equal(existsSync(join(dir, '.prism')), false)

  // After a review, --require none is not met, and an explicit existing --db works.
  assert.equal(cli(dir, ['review', '--base', 'main']).code, 0)
  const pending = cli(dir, ['status', '--require', 'none'])
  assert.equal(pending.code, 1)
  assert.match(pending.stderr, /state is pending, not none/)
  assert.equal(json(dir, ['status', '--db', '.prism/review.db']).state, 'pending')
})

test('serve refuses a PRISM_REVIEW_TOKEN with whitespace or under 16 characters at start', (t) => {
  const dir = repoWithFeature(t)
  for (const [token, pattern] of [
    ['abcdefgh ijklmnopqrstu', /contains whitespace/],
    ['abcdefghijklmnopqrstu\n', /contains whitespace/],
    ['\tabcdefghijklmnopqrstu', /contains whitespace/],
    ['short-token', /is 11 characters; serve needs at least 16/],
  ]) {
    const r = cli(dir, ['serve', '--port', '0'], { PRISM_REVIEW_TOKEN: token })
    assert.equal(r.code, 2, JSON.stringify(token))
    assertOneLine(r.stderr)
    assert.match(r.stderr, pattern)
    assert.ok(!r.stderr.includes(token.trim()), 'the token is not echoed')
  }
  assert.equal(existsSync(join(dir, '.prism')), false)
})

test('in a repository without commits, "missing base" says there are no commits', (t) => {
  const dir = emptyRepo(t)
  writeFileSync(join(dir, 'a.txt'), 'uncommitted\n')
  for (const args of [['review'], ['review', '--base', 'main'], ['status'], ['log', '--json']]) {
    const r = cli(dir, args)
    assert.equal(r.code, 2, args.join(' '))
    assertOneLine(r.stderr)
    assert.match(r.stderr, /missing base: this repository has no commits yet/)
  }
  assert.equal(existsSync(join(dir, '.prism')), false)
})

test('a patch too large to review says what the caps are and what to do, and leaves nothing behind', (t) => {
  const dir = repoWithFeature(t)
  mkdirSync(join(dir, 'generated'))
  for (let i = 0; i < 3000; i++) writeFileSync(join(dir, 'generated', `module-${String(i).padStart(4, '0')}.txt`), `${i}\n`)
  git(dir, 'add', '-A')
  git(dir, 'commit', '--quiet', '-m', 'agent adds 3000 files')
  for (const args of [['review', '--base', 'main'], ['review', '--base', 'main', '--check', 'never=touch ran.txt']]) {
    const r = cli(dir, args)
    assert.equal(r.code, 1, r.stderr)
    assertOneLine(r.stderr)
    assert.match(r.stderr, /the patch of feature over main is too large to review: its 3002 changed files make a review manifest over the caps/)
    assert.match(r.stderr, /at most 64 KiB of manifest \(maxManifestBytes\) in an artifact record of at most 64 KiB/)
    assert.match(r.stderr, /no option raises it/)
    assert.match(r.stderr, /Review the change in smaller parts/)
    assert.doesNotMatch(r.stderr, /^prism-review: ERR_/)
  }
  // Refused before anything ran or was written: no check, no database, no patch file.
  assert.equal(existsSync(join(dir, 'ran.txt')), false)
  assert.equal(existsSync(join(dir, '.prism')), false)
})

test('a review that outgrows the caps only with its check output is refused after the checks, without a patch file', (t) => {
  const dir = repoWithFeature(t)
  // As many files as keep the manifest without checks 1.5 KiB under the 64 KiB cap (found
  // with the library itself); three checks of 2 KiB of output each then push it over.
  const name = (i) => `generated/module-${String(i).padStart(4, '0')}.txt`
  const size = (n) => {
    const paths = Array.from({ length: n }, (_, i) => name(i)).concat(['a.txt', 'c.txt'])
    const { review } = createCodingPatchReviewManifest({
      threadId: 'git-feature',
      artifactId: 'patch-feature-0123456789',
      identity: { repositoryId: 'prism-cli-XXXXXX', remoteFingerprint: 'f'.repeat(64), defaultBranch: 'main' },
      base: 'a'.repeat(40),
      head: 'b'.repeat(40),
      patch: { kind: 'patch', uri: `.prism/patches/${'c'.repeat(64)}.patch`, sha256: 'c'.repeat(64), bytes: 100000 },
      changedPaths: paths,
      diffstat: paths.map((file) => ({ file, additions: 1, deletions: 0 })),
      limits: { maxManifestBytes: 262144 },
    })
    return Buffer.byteLength(JSON.stringify(review))
  }
  let n = 100
  while (size(n + 1) <= 65536 - 1536) n++
  mkdirSync(join(dir, 'generated'))
  for (let i = 0; i < n; i++) writeFileSync(join(dir, name(i)), `${i}\n`)
  git(dir, 'add', '-A')
  git(dir, 'commit', '--quiet', '--amend', '-m', 'agent change with many files')
  const loud = (k) => `out${k}=node -e "process.stdout.write('${k}'.repeat(3000)); require('fs').writeFileSync('ran${k}.txt', '')"`
  const r = cli(dir, ['review', '--base', 'main', '--check', loud(1), '--check', loud(2), '--check', loud(3)])
  assert.equal(r.code, 1, r.stderr)
  assertOneLine(r.stderr)
  assert.match(r.stderr, /too large to review: its \d+ changed files make a review manifest over the caps/)
  for (const k of [1, 2, 3]) assert.ok(existsSync(join(dir, `ran${k}.txt`)), 'the checks ran')
  const patches = join(dir, '.prism', 'patches')
  assert.deepEqual(existsSync(patches) ? readdirSync(patches) : [], [], 'a patch file was left behind')
  // Without the checks it fits.
  assert.equal(cli(dir, ['review', '--base', 'main']).code, 0)
  assert.equal(readdirSync(patches).length, 1)
})

// A pseudo-terminal from util-linux `script`, so the CLI sees a TTY on stdout and stderr.
function underTerminal(dir, args, env = {}) {
  const quote = (s) => `'${String(s).replace(/'/g, `'\\''`)}'`
  const command = [process.execPath, BIN, ...args].map(quote).join(' ')
  const r = spawnSync('script', ['-q', '-e', '-c', command, '/dev/null'], { cwd: dir, encoding: 'utf8', env: { ...process.env, TERM: 'xterm', ...env } })
  return { code: r.status, out: r.stdout }
}

const SGR = /\u001b\[[0-9;]*m/

test('progress and colours on a terminal only, and never colours with NO_COLOR', { skip: process.platform !== 'linux' && 'needs util-linux script' }, (t) => {
  const dir = repoWithFeature(t)
  const env = { NO_COLOR: '' }
  const tty = underTerminal(dir, ['review', '--base', 'main', '--check', 'slow=sleep 1.5'], env)
  assert.equal(tty.code, 0, tty.out)
  assert.match(tty.out, /prism-review: running check slow/)
  assert.match(tty.out, /\u001b\[33mpending\u001b\[0m/)
  assert.match(tty.out, /slow: \u001b\[32mok\u001b\[0m/)

  const noColour = underTerminal(dir, ['review', '--base', 'main', '--check', 'slow=sleep 1.4'], { NO_COLOR: '1' })
  assert.equal(noColour.code, 0, noColour.out)
  assert.match(noColour.out, /prism-review: running check slow/)
  assert.doesNotMatch(noColour.out, SGR)
  assert.match(noColour.out, /^state {6}pending\r?$/m)

  // Not a terminal: no progress, no colours.
  const piped = cli(dir, ['review', '--base', 'main', '--check', 'slow=sleep 1.3'], { NO_COLOR: '' })
  assert.equal(piped.code, 0)
  assert.equal(piped.stderr, '')
  assert.doesNotMatch(piped.stdout, SGR)
  assert.doesNotMatch(piped.stdout, /running check/)
})
