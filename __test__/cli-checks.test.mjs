// `review --check`: which checks a revision records, what changed since the previous one,
// time limits and process groups, interruption, and secrets in check output. The CLI runs
// as a subprocess in real temporary git repositories.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { writeFileSync, readFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { BIN, TOKEN, cli, json, assertOneLine, git, repoWithFeature, databaseBytes, startServe, alive, waitFor } from './cli-support.mjs'

const FAIL2 = 'lint=node -e "console.log(\'lint says no\'); process.exit(2)"'

test('review without --check keeps the recorded checks, --no-checks drops them, and every change is named', (t) => {
  const dir = repoWithFeature(t)
  const first = json(dir, ['review', '--base', 'main', '--check', FAIL2])
  assert.equal(first.action, 'attached')
  assert.equal(first.checksSource, 'ran')
  assert.deepEqual(
    first.checks.map((c) => [c.name, c.exitCode]),
    [['lint', 2]],
  )
  assert.equal(first.changes, undefined)

  // The agent amends its commit and reviews again without --check: the failing check stays.
  writeFileSync(join(dir, 'd.txt'), 'another file\n')
  git(dir, 'add', '-A')
  git(dir, 'commit', '--quiet', '--amend', '-m', 'agent change, amended')
  const kept = json(dir, ['review', '--base', 'main'])
  assert.equal(kept.action, 'revised')
  assert.equal(kept.state, 'pending')
  assert.equal(kept.checksSource, 'kept')
  assert.deepEqual(kept.checks, first.checks)
  assert.deepEqual(kept.previous, { artifactId: first.artifactId, revision: 1, digest: first.digest })
  assert.deepEqual(Object.keys(kept.changes).sort(), ['head', 'patch', 'paths'])
  assert.deepEqual(kept.changes.head, { from: first.head.commit, to: kept.head.commit })
  assert.deepEqual(kept.changes.patch, { from: first.patchSha256, to: kept.patchSha256 })
  assert.deepEqual(kept.changes.paths, { added: ['d.txt'], removed: [] })
  assert.match(readFileSync(join(dir, '.prism', 'review.db')).toString('latin1'), /lint says no/)

  // The check runs again and passes: the change names the check only.
  const fixed = json(dir, ['review', '--base', 'main', '--check', 'lint=node -e "console.log(\'clean\')"'])
  assert.equal(fixed.action, 'revised')
  assert.equal(fixed.checksSource, 'ran')
  assert.deepEqual(Object.keys(fixed.changes), ['checks'])
  assert.deepEqual(fixed.changes.checks.added, [])
  assert.deepEqual(fixed.changes.checks.removed, [])
  assert.equal(fixed.changes.checks.changed.length, 1)
  assert.equal(fixed.changes.checks.changed[0].name, 'lint')
  assert.equal(fixed.changes.checks.changed[0].from.exitCode, 2)
  assert.equal(fixed.changes.checks.changed[0].to.exitCode, 0)

  // --no-checks drops them, and says so.
  const cleared = json(dir, ['review', '--base', 'main', '--no-checks'])
  assert.equal(cleared.action, 'revised')
  assert.equal(cleared.checksSource, 'cleared')
  assert.deepEqual(cleared.checks, [])
  assert.deepEqual(cleared.changes, { checks: { added: [], removed: [{ name: 'lint', exitCode: 0 }], changed: [] } })
  // Nothing to keep now: reviewing again changes nothing.
  const again = json(dir, ['review', '--base', 'main'])
  assert.equal(again.action, 'unchanged')
  assert.equal(again.checksSource, 'none')

  // main moves on and the branch is rebased onto it: base and head change, the patch text does not.
  git(dir, 'switch', '--quiet', 'main')
  writeFileSync(join(dir, 'b.txt'), 'base file, changed on main\n')
  git(dir, 'commit', '--quiet', '-am', 'main moves on')
  git(dir, 'switch', '--quiet', 'feature')
  git(dir, 'rebase', '--quiet', 'main')
  // A remote appears too: the repository identity changes.
  git(dir, 'remote', 'add', 'origin', 'https://example.invalid/org/widgets.git')
  const rebased = json(dir, ['review', '--base', 'main', '--check', FAIL2])
  assert.deepEqual(Object.keys(rebased.changes).sort(), ['base', 'checks', 'head', 'identity'])
  assert.deepEqual(rebased.changes.base, { from: cleared.base.mergeBase, to: rebased.base.mergeBase })
  assert.deepEqual(Object.keys(rebased.changes.identity).sort(), ['remoteFingerprint', 'repositoryId'])
  assert.equal(rebased.changes.identity.repositoryId.to, 'widgets')
  assert.deepEqual(rebased.changes.checks.added, [{ name: 'lint', exitCode: 2 }])

  // The same, in words.
  writeFileSync(join(dir, 'c.txt'), 'new file, amended again\n')
  git(dir, 'commit', '--quiet', '--amend', '-am', 'agent change, amended again')
  const text = cli(dir, ['review', '--base', 'main'])
  assert.equal(text.code, 0, text.stderr)
  assert.match(text.stdout, /^changed {4}since revision 5: head [0-9a-f]{12} → [0-9a-f]{12}$/m)
  assert.match(text.stdout, /^ {11}patch sha256 [0-9a-f]{12} → [0-9a-f]{12}$/m)
  assert.match(text.stdout, /^check {6}lint: failed \(exit 2\) \(kept from revision 5, not run again; --no-checks drops them\)$/m)

  const both = cli(dir, ['review', '--base', 'main', '--no-checks', '--check', 'x=true'])
  assert.equal(both.code, 2)
  assertOneLine(both.stderr)
  assert.match(both.stderr, /--no-checks and --check cannot be given together/)
})

test('--check-timeout stops a check and everything it started, and records exit 124', (t) => {
  const dir = repoWithFeature(t)
  const started = Date.now()
  const r = json(dir, ['review', '--base', 'main', '--check-timeout', '1', '--check', 'hang=sleep 60 & echo $! > bg.pid; echo started; sleep 60'])
  const took = Date.now() - started
  assert.ok(took < 15_000, `the check was not stopped in time (${took} ms)`)
  assert.equal(r.checks[0].exitCode, 124)
  assert.match(r.checks[0].summary, /^timed out after 1s \(--check-timeout\)\nstarted$/)
  const pid = Number(readFileSync(join(dir, 'bg.pid'), 'utf8'))
  assert.ok(pid > 0)
  assert.equal(alive(pid), false, 'the background child of the timed-out check survived')

  // A check that exits and leaves a child running: the child is stopped, the review goes on.
  const quick = Date.now()
  const left = json(dir, ['review', '--base', 'main', '--check', 'leaves=sleep 60 & echo $! > left.pid; echo done'])
  assert.ok(Date.now() - quick < 15_000)
  assert.equal(left.checks[0].exitCode, 0)
  assert.equal(alive(Number(readFileSync(join(dir, 'left.pid'), 'utf8'))), false, 'the child left behind survived')

  for (const bad of ['0', 'abc', '25h', '-5', '1.5s']) {
    const u = cli(dir, ['review', '--base', 'main', `--check-timeout=${bad}`, '--check', 'x=true'])
    assert.equal(u.code, 2, bad)
    assertOneLine(u.stderr)
    assert.match(u.stderr, /--check-timeout must be a duration from 1s to 24h/)
  }
})

for (const [signal, exitCode] of [
  ['SIGTERM', 143],
  ['SIGINT', 130],
]) {
  test(`${signal} to prism-review while a check runs stops the check's whole process group and records nothing`, async (t) => {
    const dir = repoWithFeature(t)
    const pids = join(dir, 'pids')
    const child = spawn(process.execPath, [BIN, 'review', '--base', 'main', '--check', 'slow=sleep 300 & echo $! >> pids; sleep 300 & echo $! >> pids; echo $$ >> pids; wait'], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    t.after(() => child.kill('SIGKILL'))
    let stderr = ''
    let stdout = ''
    child.stderr.on('data', (c) => (stderr += c))
    child.stdout.on('data', (c) => (stdout += c))
    const exited = new Promise((resolve) => child.on('exit', (code, sig) => resolve({ code, sig })))
    await waitFor('the check to start its processes', () => existsSync(pids) && readFileSync(pids, 'utf8').trim().split('\n').length === 3)
    const started = readFileSync(pids, 'utf8').trim().split('\n').map(Number)
    for (const pid of started) assert.equal(alive(pid), true)

    const killedAt = Date.now()
    process.kill(child.pid, signal)
    const end = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve({ late: true }), 15_000))])
    assert.ok(!end.late, `prism-review did not exit within 15 s of ${signal}`)
    assert.ok(Date.now() - killedAt < 15_000)
    assert.equal(end.code, exitCode, stderr)
    assertOneLine(stderr)
    assert.match(stderr, new RegExp(`interrupted by ${signal} while check "slow" ran \\(its processes were stopped\\): nothing was recorded`))
    assert.equal(stdout, '')
    for (const pid of started) assert.equal(alive(pid), false, `process ${pid} of the check survived ${signal}`)
    // Nothing recorded, nothing written: no database, no patch body.
    assert.equal(existsSync(join(dir, '.prism')), false)
  })
}

test('secrets in check output never reach the database, the --json output or the HTTP API', async (t) => {
  const dir = repoWithFeature(t)
  const env = {
    AWS_ACCESS_KEY_ID: 'AKIAQWERTYUIOPASDF12',
    AWS_SECRET_ACCESS_KEY: 'Zx9vQ2mN8bL4kJ6hG1fD3sA5pO7iU0yT/Re+WqE2',
    MY_SERVICE_TOKEN: 'svc-token-1f2e3d4c5b6a',
    DB_PASSWORD: 'correct-horse-battery',
    DATABASE_URL: 'postgres://app:url-pass-8c1d@db.internal:5432/app',
    SESSION_COOKIE: 'sess-cookie-77aa88bb99',
  }
  // Printed by the check, registered nowhere: only their shapes give them away.
  const shaped = {
    github: 'ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8',
    gitlab: 'glpat-Zq8Xw7Cv6Bn5Mm4Ll3Kk',
    npm: 'npm_Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8Ii9Jj0Kk1Ll2',
    slack: 'xoxb-2837465019-5647382910-QwErTyUiOp',
    jwt: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhZ2VudCIsImlhdCI6MTcwMDAwMDAwMH0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg',
    keyBody: 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7secretkeybody',
    password: 'pass-literal-4242',
  }
  writeFileSync(
    join(dir, 'print-secrets.mjs'),
    [
      "console.log('visible-marker: the check ran')",
      "for (const [k, v] of Object.entries(process.env)) if (/AWS|TOKEN|PASSWORD|DATABASE_URL|COOKIE/.test(k)) console.log(`${k}=${v}`)",
      `console.log('github ${shaped.github}, gitlab ${shaped.gitlab}')`,
      `console.error('//registry.npmjs.org/:_authToken=${shaped.npm}')`,
      `console.log('slack ${shaped.slack}')`,
      `console.log('Authorization: Bearer ${shaped.jwt}')`,
      `console.log('-----BEGIN PRIVATE KEY-----\\n${shaped.keyBody}\\n-----END PRIVATE KEY-----')`,
      `console.log('connecting with password=${shaped.password} to the database')`,
      "process.exit(1)",
    ].join('\n'),
  )
  const secrets = [...Object.values(env), 'url-pass-8c1d', ...Object.values(shaped)]
  const check = ['review', '--base', 'main', '--check', 'dump=node print-secrets.mjs']
  const r = cli(dir, [...check, '--json'], env)
  assert.equal(r.code, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  assert.equal(out.checks[0].exitCode, 1)
  const summary = out.checks[0].summary
  assert.match(summary, /visible-marker: the check ran/)
  assert.match(summary, /\[REDACTED\]/)
  const db = databaseBytes(dir)
  assert.ok(db.includes('visible-marker'), 'the summary was recorded')
  const log = cli(dir, ['log', '--base', 'main', '--json'], env)
  assert.equal(log.code, 0, log.stderr)

  const { info, child, exited } = await startServe(t, dir, env)
  const res = await fetch(`${info.url}/${encodeURIComponent(out.threadId)}/${encodeURIComponent(out.artifactId)}`, { headers: { authorization: `Bearer ${TOKEN}` } })
  assert.equal(res.status, 200)
  const http = Buffer.from(await res.arrayBuffer())
  assert.ok(http.includes('visible-marker'), 'the HTTP record carries the summary')
  child.kill('SIGTERM')
  await exited

  for (const secret of secrets) {
    assert.ok(!r.stdout.includes(secret), `--json output holds ${secret}`)
    assert.ok(!r.stderr.includes(secret), `stderr holds ${secret}`)
    assert.ok(!log.stdout.includes(secret), `log --json holds ${secret}`)
    assert.ok(!db.includes(Buffer.from(secret)), `the database holds ${secret}`)
    assert.ok(!http.includes(Buffer.from(secret)), `the HTTP response holds ${secret}`)
  }
  // The text output names the check's result only.
  const text = cli(dir, check, env)
  for (const secret of secrets) assert.ok(!text.stdout.includes(secret))
})
