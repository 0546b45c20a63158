// Helpers for the command-line tests: the CLI runs as a subprocess in real temporary git
// repositories (user.name/user.email configured locally in each).
import assert from 'node:assert/strict'
import { spawn, spawnSync, execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync, rmSync, readFileSync, readdirSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createInterface } from 'node:readline'

export const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'prism-review.mjs')
export const TOKEN = 'test-token-0123456789abcdef'

export function cli(cwd, args, env = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', env: { ...process.env, ...env } })
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr }
}

export function json(cwd, args, env = {}) {
  const r = cli(cwd, [...args, '--json'], env)
  assert.equal(r.code, 0, `prism-review ${args.join(' ')} failed: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

/** One clear line on stderr, no stack trace. */
export function assertOneLine(stderr) {
  const lines = stderr.split('\n').filter((l) => l !== '')
  assert.equal(lines.length, 1, `expected one stderr line, got:\n${stderr}`)
  assert.match(lines[0], /^prism-review: /)
  assert.doesNotMatch(stderr, /\n\s+at /)
}

export function git(cwd, ...args) {
  return execFileSync('git', args, { cwd, encoding: 'utf8' }).trim()
}

export function tempDir(t, prefix = 'prism-cli-') {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** An empty repository with a local identity. */
export function emptyRepo(t, branch = 'main') {
  const dir = tempDir(t)
  git(dir, 'init', '--quiet', `--initial-branch=${branch}`)
  git(dir, 'config', 'user.name', 'CLI Test')
  git(dir, 'config', 'user.email', 'cli-test@example.invalid')
  git(dir, 'config', 'commit.gpgsign', 'false')
  return dir
}

/** A repository with one commit on main and one agent commit on branch `feature`. */
export function repoWithFeature(t) {
  const dir = emptyRepo(t)
  writeFileSync(join(dir, 'a.txt'), 'one\ntwo\nthree\n')
  writeFileSync(join(dir, 'b.txt'), 'base file\n')
  git(dir, 'add', '-A')
  git(dir, 'commit', '--quiet', '-m', 'initial')
  git(dir, 'switch', '--quiet', '-c', 'feature')
  writeFileSync(join(dir, 'a.txt'), 'one\ntwo\nthree\nfour: unique-patch-marker-7f3a\n')
  writeFileSync(join(dir, 'c.txt'), 'new file\n')
  git(dir, 'add', '-A')
  git(dir, 'commit', '--quiet', '-m', 'agent change')
  return dir
}

/** Every file of the database (`review.db`, `-wal`, `-shm`) in `.prism/`, concatenated. */
export function databaseBytes(dir) {
  const prism = join(dir, '.prism')
  if (!existsSync(prism)) return Buffer.alloc(0)
  return Buffer.concat(
    readdirSync(prism)
      .filter((f) => f.startsWith('review.db'))
      .map((f) => readFileSync(join(prism, f))),
  )
}

/** Starts `serve --port 0 --json`; resolves `{ child, info, stderr(), exited }` once it prints its address. */
export async function startServe(t, dir, env = {}) {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--json'], {
    cwd: dir,
    env: { ...process.env, PRISM_REVIEW_TOKEN: TOKEN, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (c) => (stderr += c))
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  t.after(() => child.kill('SIGKILL'))
  // --json prints one pretty-printed document; read until it parses.
  let text = ''
  let info
  for await (const line of createInterface({ input: child.stdout })) {
    text += line + '\n'
    try {
      info = JSON.parse(text)
      break
    } catch {}
  }
  assert.ok(info, `serve printed no address; stderr: ${stderr}`)
  return { child, info, stderr: () => stderr, exited }
}

/** True while `pid` names a process that has not exited (a zombie has exited). */
export function alive(pid) {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return !/^\d+ \(.*\) Z /.test(stat)
  } catch {
    // No /proc (not Linux): the signal check above is all there is.
    return process.platform !== 'linux'
  }
}

export async function waitFor(what, predicate, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs
  while (Date.now() < until) {
    if (await predicate()) return
    await new Promise((r) => setTimeout(r, 50))
  }
  assert.fail(`timed out waiting for ${what}`)
}

export function writeFiles(dir, files) {
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)
}
