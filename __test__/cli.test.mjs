// The prism-review command line, driven as a subprocess against real temporary git
// repositories (user.name/user.email configured locally in each).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync, execFileSync } from 'node:child_process'
import { writeFileSync, readFileSync, statSync, existsSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BIN, TOKEN, cli, json, assertOneLine, git, tempDir, emptyRepo, repoWithFeature, databaseBytes, startServe } from './cli-support.mjs'

test('review stores the patch body under .prism/patches, keeps only its reference in the database, and starts pending', (t) => {
  const dir = repoWithFeature(t)
  const text = cli(dir, ['review', '--base', 'main'])
  assert.equal(text.code, 0, text.stderr)
  assert.match(text.stdout, /^attached a new review for feature/m)
  assert.match(text.stdout, /^review {5}review-[0-9a-f]{24}$/m)
  assert.match(text.stdout, /^digest {5}[0-9a-f]{64}$/m)
  assert.match(text.stdout, /^state {6}pending$/m)

  const patch = execFileSync('git', ['diff', '--binary', '--full-index', '--no-renames', 'main', 'feature'], { cwd: dir })
  const sha = createHash('sha256').update(patch).digest('hex')
  const r = json(dir, ['review', '--base', 'main'])
  assert.equal(r.action, 'unchanged')
  assert.equal(r.state, 'pending')
  assert.equal(r.patchSha256, sha)
  assert.equal(r.patch.uri, `.prism/patches/${sha}.patch`)
  assert.deepEqual(readFileSync(join(dir, '.prism', 'patches', `${sha}.patch`)), patch)
  assert.deepEqual(r.changedPaths, ['a.txt', 'c.txt'])
  assert.deepEqual(r.diffstat, [
    { file: 'a.txt', additions: 1, deletions: 0 },
    { file: 'c.txt', additions: 1, deletions: 0 },
  ])
  assert.match(r.reviewId, /^review-[0-9a-f]{24}$/)
  assert.match(r.digest, /^[0-9a-f]{64}$/)

  // A damaged body file is rewritten by the next review.
  writeFileSync(join(dir, '.prism', 'patches', `${sha}.patch`), 'damaged')
  assert.equal(json(dir, ['review', '--base', 'main']).action, 'unchanged')
  assert.deepEqual(readFileSync(join(dir, '.prism', 'patches', `${sha}.patch`)), patch)

  // The database holds the reference, never the body.
  const db = join(dir, '.prism', 'review.db')
  assert.ok(existsSync(db))
  const dbBytes = databaseBytes(dir)
  assert.ok(!dbBytes.includes('unique-patch-marker-7f3a'), 'the patch body leaked into the database')
  // The link secret is generated once, mode 0600, beside the database.
  const secretFile = join(dir, '.prism', 'link-secret')
  assert.equal(statSync(secretFile).mode & 0o777, 0o600)
  const secret = readFileSync(secretFile, 'utf8')
  cli(dir, ['status', '--base', 'main'])
  assert.equal(readFileSync(secretFile, 'utf8'), secret)
  // The store stays out of git.
  assert.equal(git(dir, 'status', '--porcelain'), '')
})

test('approve makes the review accepted and status --require gates on it with the exit code', (t) => {
  const dir = repoWithFeature(t)
  assert.equal(cli(dir, ['review', '--base', 'main']).code, 0)
  const pending = cli(dir, ['status', '--base', 'main', '--require', 'accepted'])
  assert.equal(pending.code, 1)
  assert.match(pending.stdout, /^state {6}pending/m)
  assertOneLine(pending.stderr)
  assert.match(pending.stderr, /state is pending, not accepted/)
  assert.equal(cli(dir, ['status', '--base', 'main', '--require', 'pending']).code, 0)

  const a = cli(dir, ['approve', '--base', 'main', '--note', 'ship it', '--reviewer', 'user:alice'])
  assert.equal(a.code, 0, a.stderr)
  assert.match(a.stdout, /approved revision 1/)
  const ok = cli(dir, ['status', '--base', 'main', '--require', 'accepted'])
  assert.equal(ok.code, 0, ok.stderr)
  assert.equal(ok.stderr, '')
  const st = json(dir, ['status', '--base', 'main', '--require', 'accepted'])
  assert.equal(st.state, 'accepted')
  assert.equal(st.ok, true)
  assert.equal(st.decision.state, 'approved')
  assert.equal(st.decision.reviewer, 'user:alice')
  assert.equal(st.decision.note, 'ship it')
  // The default reviewer is the git user.
  const r = json(dir, ['reject', '--base', 'main'])
  assert.equal(r.state, 'rejected')
  assert.equal(r.reviewer, 'user:cli-test@example.invalid')
  assert.equal(cli(dir, ['status', '--base', 'main', '--require', 'accepted']).code, 1)

  const log = json(dir, ['log', '--base', 'main'])
  assert.deepEqual(
    log.history.map((e) => [e.kind, e.version, e.state ?? null]),
    [
      ['revision', 1, null],
      ['decision', 1, 'rejected'],
    ],
  )
  const text = cli(dir, ['log', '--base', 'main'])
  assert.equal(text.code, 0)
  assert.match(text.stdout, /revision 1: head [0-9a-f]{12} over [0-9a-f]{12}/)
  assert.match(text.stdout, /revision 1 rejected by user:cli-test@example.invalid/)
})

test('the base defaults to main, and a review records its checks', (t) => {
  const dir = repoWithFeature(t)
  const r = json(dir, ['review', '--check', 'pass=node -e "console.log(42)"', '--check', 'fail=node -e "console.error(\'boom\'); process.exit(3)"'])
  assert.equal(r.base.ref, 'main')
  assert.deepEqual(
    r.checks.map((c) => [c.name, c.exitCode]),
    [
      ['pass', 0],
      ['fail', 3],
    ],
  )
  assert.match(r.checks[0].summary, /42/)
  assert.match(r.checks[1].summary, /boom/)
  assert.ok(!JSON.stringify(r.checks).includes('process.exit'), 'the command itself is not recorded')
  // A summary is bounded (the tail of the output is kept).
  const big = json(dir, ['review', '--check', 'big=node -e "process.stdout.write(\'x\'.repeat(200000) + \'END\')"'])
  assert.equal(big.action, 'revised')
  assert.ok(Buffer.byteLength(big.checks[0].summary) <= 2048)
  assert.match(big.checks[0].summary, /^ok\n…x+END$/)
  const bad = cli(dir, ['review', '--check', 'no-equals-sign'])
  assert.equal(bad.code, 2)
  assertOneLine(bad.stderr)
})

test('an amended commit supersedes the acceptance, and reviewing again opens a new pending revision', (t) => {
  const dir = repoWithFeature(t)
  assert.equal(cli(dir, ['review', '--base', 'main']).code, 0)
  assert.equal(cli(dir, ['approve', '--base', 'main']).code, 0)
  assert.equal(json(dir, ['status', '--base', 'main']).state, 'accepted')

  writeFileSync(join(dir, 'c.txt'), 'new file, amended\n')
  git(dir, 'commit', '--quiet', '--amend', '-am', 'agent change (amended)')
  const st = cli(dir, ['status', '--base', 'main', '--require', 'accepted'])
  assert.equal(st.code, 1)
  assert.match(st.stdout, /^state {6}superseded: head moved from [0-9a-f]{12} to [0-9a-f]{12}; patch changed/m)
  assert.match(st.stderr, /state is superseded, not accepted/)
  // A decision on an out-of-date review is refused.
  const refused = cli(dir, ['approve', '--base', 'main'])
  assert.equal(refused.code, 1)
  assertOneLine(refused.stderr)
  assert.match(refused.stderr, /out of date/)

  const again = json(dir, ['review', '--base', 'main'])
  assert.equal(again.action, 'revised')
  assert.equal(again.revision, 2)
  assert.equal(again.state, 'pending')
  assert.equal(cli(dir, ['approve', '--base', 'main']).code, 0)
  assert.equal(json(dir, ['status', '--base', 'main']).state, 'accepted')
})

test('a review whose artifact is full continues in the next artifact', (t) => {
  const dir = repoWithFeature(t)
  // ~200 long paths make a manifest of ~37 KiB: two revisions overflow the 64 KiB record.
  for (let i = 0; i < 200; i++) writeFileSync(join(dir, `generated-file-with-a-deliberately-long-name-for-the-manifest-${String(i).padStart(4, '0')}.txt`), `${i}\n`)
  git(dir, 'add', '-A')
  git(dir, 'commit', '--quiet', '--amend', '-m', 'agent change with many files')
  const first = json(dir, ['review', '--base', 'main'])
  assert.equal(first.action, 'attached')
  writeFileSync(join(dir, 'c.txt'), 'amended\n')
  git(dir, 'commit', '--quiet', '--amend', '-am', 'agent change, amended')
  const second = json(dir, ['review', '--base', 'main'])
  assert.equal(second.action, 'rolled over')
  assert.equal(second.artifactId, `${first.artifactId}-2`)
  assert.equal(second.state, 'pending')
  assert.equal(cli(dir, ['approve', '--base', 'main']).code, 0)
  assert.equal(cli(dir, ['status', '--base', 'main', '--require', 'accepted']).code, 0)
  const log = json(dir, ['log', '--base', 'main'])
  assert.deepEqual(
    log.history.map((e) => [e.artifactId, e.kind, e.version]),
    [
      [first.artifactId, 'revision', 1],
      [second.artifactId, 'revision', 1],
      [second.artifactId, 'decision', 1],
    ],
  )
})

test('a rebase onto a new base supersedes the acceptance even when the patch text is the same', (t) => {
  const dir = repoWithFeature(t)
  assert.equal(cli(dir, ['review', '--base', 'main']).code, 0)
  assert.equal(cli(dir, ['approve', '--base', 'main']).code, 0)
  const before = json(dir, ['status', '--base', 'main'])
  assert.equal(before.state, 'accepted')

  git(dir, 'switch', '--quiet', 'main')
  writeFileSync(join(dir, 'b.txt'), 'base file, changed on main\n')
  git(dir, 'commit', '--quiet', '-am', 'main moves on')
  git(dir, 'switch', '--quiet', 'feature')
  // Before the rebase the merge base is unchanged: still accepted.
  assert.equal(json(dir, ['status', '--base', 'main']).state, 'accepted')
  git(dir, 'rebase', '--quiet', 'main')

  const st = cli(dir, ['status', '--base', 'main', '--require', 'accepted'])
  assert.equal(st.code, 1)
  assert.match(st.stdout, /^state {6}superseded: .*base moved from [0-9a-f]{12} to [0-9a-f]{12} \(rebased\)/m)
  const j = json(dir, ['status', '--base', 'main'])
  assert.equal(j.state, 'superseded')
  assert.equal(j.patchSha256, before.patchSha256, 'same patch text, new base')
  assert.notEqual(j.base.mergeBase, before.base.mergeBase)
})

test('the remote fingerprint is the SHA-256 of the credential-free remote URL, else of the repository root', (t) => {
  const dir = repoWithFeature(t)
  assert.equal(cli(dir, ['review', '--base', 'main']).code, 0)
  const local = json(dir, ['status', '--base', 'main'])
  const root = git(dir, 'rev-parse', '--show-toplevel')
  assert.equal(local.identity.remoteFingerprint, createHash('sha256').update(root).digest('hex'))
  assert.equal(local.identity.defaultBranch, 'main')

  git(dir, 'remote', 'add', 'origin', 'https://agent:s3cret-tok@example.invalid/org/widgets.git')
  const remote = json(dir, ['status', '--base', 'main'])
  assert.equal(remote.identity.remoteFingerprint, createHash('sha256').update('https://example.invalid/org/widgets.git').digest('hex'))
  assert.equal(remote.identity.repositoryId, 'widgets')
  assert.equal(remote.state, 'superseded', 'a changed repository identity supersedes the review')
  assert.match(remote.reason, /repository identity changed/)
  assert.equal(json(dir, ['review', '--base', 'main']).state, 'pending')
  const dbBytes = databaseBytes(dir)
  assert.ok(!dbBytes.includes('s3cret-tok'), 'remote credentials reached the database')

  git(dir, 'remote', 'set-url', 'origin', 'git@example.invalid:org/widgets.git')
  assert.equal(json(dir, ['status', '--base', 'main']).identity.remoteFingerprint, createHash('sha256').update('example.invalid:org/widgets.git').digest('hex'))
})

test('in a clone the base defaults to origin/HEAD, and origin/main and main are the same review', (t) => {
  const upstream = repoWithFeature(t)
  git(upstream, 'switch', '--quiet', 'main')
  const parent = tempDir(t, 'prism-cli-clone-')
  const dir = join(parent, 'clone')
  git(parent, 'clone', '--quiet', upstream, dir)
  git(dir, 'config', 'user.name', 'CLI Test')
  git(dir, 'config', 'user.email', 'cli-test@example.invalid')
  git(dir, 'switch', '--quiet', '-c', 'feature', 'origin/feature')
  const r = json(dir, ['review'])
  assert.equal(r.base.ref, 'origin/main')
  assert.equal(r.identity.defaultBranch, 'main')
  assert.equal(cli(dir, ['approve']).code, 0)
  const same = json(dir, ['status', '--base', 'main'])
  assert.equal(same.artifactId, r.artifactId)
  assert.equal(same.state, 'accepted')
  // A detached checkout of the reviewed commit (as CI makes) finds the same review.
  git(dir, 'switch', '--quiet', '--detach', 'origin/feature')
  git(dir, 'branch', '--quiet', '-D', 'feature')
  const detached = json(dir, ['status'])
  assert.equal(detached.head.ref, 'feature')
  assert.equal(detached.artifactId, r.artifactId)
  assert.equal(detached.state, 'accepted')
})

test('bad usage is one clear stderr line and exit code 2', (t) => {
  const dir = repoWithFeature(t)
  const cases = [
    [dir, ['review', '--bogus'], /unknown option --bogus/],
    [dir, ['--bogus'], /unknown option --bogus/],
    [dir, ['frobnicate'], /unknown command "frobnicate"/],
    [dir, [], /missing command/],
    [dir, ['status', '--base'], /option --base needs a value/],
    [dir, ['status', 'extra'], /unexpected argument extra/],
    [dir, ['status', '--require', 'maybe'], /--require must be one of/],
    [dir, ['review', '--base', 'no-such-branch'], /missing base: "no-such-branch" is not a commit/],
    [dir, ['approve', '--reviewer', 'nobody'], /--reviewer must look like <kind>:<id>/],
    [dir, ['status', '--thread', 'not an id'], /--thread must be 1-128 characters/],
    [dir, ['serve', '--port', 'eighty'], /--port must be an integer/],
    [tempDir(t, 'prism-cli-nogit-'), ['review'], /not a git repository/],
    [tempDir(t, 'prism-cli-nogit-'), ['status', '--json'], /not a git repository/],
  ]
  for (const [cwd, args, pattern] of cases) {
    const r = cli(cwd, args)
    assert.equal(r.code, 2, `prism-review ${args.join(' ')}: ${r.stderr}`)
    assertOneLine(r.stderr)
    assert.match(r.stderr, pattern)
    assert.equal(r.stdout, '')
  }
  // A repository with no main/master and no origin/HEAD: the base is missing.
  const lone = emptyRepo(t, 'trunk')
  writeFileSync(join(lone, 'a.txt'), 'one\n')
  git(lone, 'add', '-A')
  git(lone, 'commit', '--quiet', '-m', 'first')
  const r = cli(lone, ['review'])
  assert.equal(r.code, 2)
  assertOneLine(r.stderr)
  assert.match(r.stderr, /missing base: pass --base <ref>/)
})

test('serve answers the artifact API over real HTTP on 127.0.0.1, with the bearer token as the only authorization', async (t) => {
  const dir = repoWithFeature(t)
  const reviewed = json(dir, ['review', '--base', 'main'])

  const noToken = cli(dir, ['serve', '--port', '0'], { PRISM_REVIEW_TOKEN: '' })
  assert.equal(noToken.code, 2)
  assertOneLine(noToken.stderr)
  assert.match(noToken.stderr, /PRISM_REVIEW_TOKEN/)

  const { child, info, stderr: serveErr, exited } = await startServe(t, dir)
  assert.match(info.url, /^http:\/\/127\.0\.0\.1:\d+\/prism\/artifacts$/)

  const url = `${info.url}/${encodeURIComponent(reviewed.threadId)}/${encodeURIComponent(reviewed.artifactId)}`
  const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }
  // A reviewer approves over HTTP; the command line sees the decision in the same database.
  const approved = await fetch(`${url}/approve`, { method: 'POST', headers: auth, body: JSON.stringify({ version: 1, reviewer: 'user:http-reviewer' }) })
  assert.equal(approved.status, 200)
  const st = json(dir, ['status', '--base', 'main'])
  assert.equal(st.state, 'accepted')
  assert.equal(st.decision.reviewer, 'user:http-reviewer')

  const ok = await fetch(url, { headers: auth })
  assert.equal(ok.status, 200)
  const record = await ok.json()
  assert.equal(record.id, reviewed.artifactId)
  assert.equal(record.threadId, reviewed.threadId)
  assert.equal(record.approvals.length, 1)
  assert.equal(record.approvals[0].state, 'approved')
  assert.equal(record.revisions[0].preview.review.digest, reviewed.digest)
  assert.ok(!JSON.stringify(record).includes(TOKEN))

  for (const headers of [{}, { authorization: 'Bearer wrong-token-0123456789abcdef' }, { authorization: TOKEN }]) {
    const denied = await fetch(url, { headers })
    assert.equal(denied.status, 401)
    const body = await denied.json()
    assert.equal(body.error.code, 'unauthorized')
  }

  child.kill('SIGTERM')
  const end = await exited
  assert.equal(end.code, 0, serveErr())
  assert.equal(serveErr(), '')
})

test('demo walks through a whole review and exits 0', () => {
  const r = spawnSync(process.execPath, [BIN, 'demo'], { encoding: 'utf8', cwd: tmpdir() })
  assert.equal(r.code ?? r.status, 0, r.stderr)
  assert.equal(r.stderr, '')
  assert.match(r.stdout, /state is pending/)
  assert.match(r.stdout, /state is accepted/)
  assert.match(r.stdout, /state is superseded: head moved/)
  assert.match(r.stdout, /ran node --check src\/broken\.cjs: exit 1, 1 diagnostic/)
  assert.match(r.stdout, /delta: 0 added, 1 removed, 0 unchanged/)
  const dirLine = /created a git repository in (\S+)/.exec(r.stdout)
  assert.ok(dirLine && !existsSync(dirLine[1]), 'the temporary repository is removed')
  const j = JSON.parse(spawnSync(process.execPath, [BIN, 'demo', '--json'], { encoding: 'utf8' }).stdout)
  assert.equal(j.ok, true)
  assert.deepEqual(
    j.steps.filter((s) => s.state).map((s) => s.state),
    ['pending', 'accepted', 'superseded', 'pending'],
  )
})

test('a reader that closes the pipe early gets no error, and the demo still cleans up', async () => {
  const child = spawn(process.execPath, [BIN, 'demo'], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  let first = ''
  child.stderr.on('data', (c) => (stderr += c))
  child.stdout.once('data', (c) => {
    first = String(c)
    child.stdout.destroy()
  })
  const code = await new Promise((resolve) => child.on('exit', resolve))
  assert.equal(code, 0, stderr)
  assert.equal(stderr, '')
  const dir = /created a git repository in (\S+)/.exec(first)
  assert.ok(dir && !existsSync(dir[1]), 'the temporary repository is removed')
})
