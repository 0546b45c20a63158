// git, always through child_process.execFile (no shell), with a fixed environment so that
// user configuration (pagers, colour, external diff drivers, textconv, quoting) cannot change
// what the review binds.
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { realpathSync } from 'node:fs'
import { basename } from 'node:path'
import { UsageError, CliError } from './errors.mjs'

const MAX_BUFFER = 512 * 1024 * 1024

/**
 * Runs `git …args` in `cwd`. Resolves `{ stdout, stderr, code }`; `stdout` is a Buffer when
 * `binary` is set. Rejects only when git itself cannot start.
 */
export function runGit(args, { cwd, binary = false, env } = {}) {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      ['-c', 'core.quotepath=off', '-c', 'color.ui=false', ...args],
      {
        cwd,
        encoding: binary ? 'buffer' : 'utf8',
        maxBuffer: MAX_BUFFER,
        windowsHide: true,
        env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_PAGER: 'cat', LC_ALL: 'C', ...env },
      },
      (err, stdout, stderr) => {
        if (err && (err.code === 'ENOENT' || err.code === 'EACCES') && typeof err.code === 'string') {
          if (err.path === 'git' || err.syscall === 'spawn git') {
            reject(new CliError('git is not installed or not on PATH'))
            return
          }
          reject(new CliError(`cannot run git in ${cwd}: ${err.code}`))
          return
        }
        if (err && err.code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER') {
          reject(new CliError(`git ${args[0]} produced more than ${MAX_BUFFER} bytes`))
          return
        }
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0
        resolve({ stdout, stderr: String(stderr ?? ''), code })
      },
    )
  })
}

/** Runs git and returns trimmed stdout; a non-zero exit becomes a CliError naming the command. */
export async function git(args, opts = {}) {
  const r = await runGit(args, opts)
  if (r.code !== 0) {
    const why = r.stderr.trim().split('\n').pop() || `exit ${r.code}`
    throw new CliError(`git ${args[0]} failed: ${why}`)
  }
  return opts.binary ? r.stdout : r.stdout.replace(/\n$/, '')
}

/** The repository root of `cwd` (real path), or a UsageError when `cwd` is not in a git work tree. */
export async function repoRoot(cwd) {
  const r = await runGit(['rev-parse', '--show-toplevel'], { cwd })
  if (r.code !== 0 || !r.stdout.trim()) {
    throw new UsageError(`not a git repository: ${cwd} (run prism-review inside a git work tree)`)
  }
  return realpathSync(r.stdout.trim())
}

/** The full commit id `ref` names, or null. */
export async function resolveCommit(root, ref) {
  if (typeof ref !== 'string' || ref === '' || ref.startsWith('-')) return null
  const r = await runGit(['rev-parse', '--verify', '--quiet', '--end-of-options', `${ref}^{commit}`], { cwd: root })
  const sha = r.stdout.trim()
  return r.code === 0 && /^[0-9a-f]{40,64}$/.test(sha) ? sha : null
}

/**
 * The current branch name. With a detached HEAD (a CI checkout), the local branch at HEAD,
 * else a remote-tracking branch at HEAD without its remote prefix, else null.
 */
export async function currentBranch(root) {
  const r = await runGit(['symbolic-ref', '--quiet', '--short', 'HEAD'], { cwd: root })
  if (r.code === 0 && r.stdout.trim()) return r.stdout.trim()
  const at = await runGit(['for-each-ref', '--points-at', 'HEAD', '--format=%(refname)', 'refs/heads', 'refs/remotes'], { cwd: root })
  if (at.code !== 0) return null
  const refs = at.stdout.split('\n').filter(Boolean)
  const local = refs.find((ref) => ref.startsWith('refs/heads/'))
  if (local) return local.slice('refs/heads/'.length)
  const remote = refs.find((ref) => ref.startsWith('refs/remotes/') && !ref.endsWith('/HEAD'))
  if (!remote) return null
  const rest = remote.slice('refs/remotes/'.length)
  const slash = rest.indexOf('/')
  return slash === -1 ? null : rest.slice(slash + 1)
}

/**
 * The repository's default branch: `origin/HEAD` when the clone knows it, else a local
 * `main` or `master`. Returns `{ ref, name }` (ref to diff against, branch name) or null.
 */
export async function defaultBranch(root) {
  const remotes = await listRemotes(root)
  for (const remote of remotes.includes('origin') ? ['origin', ...remotes.filter((r) => r !== 'origin')] : remotes) {
    const r = await runGit(['symbolic-ref', '--quiet', '--short', `refs/remotes/${remote}/HEAD`], { cwd: root })
    const short = r.stdout.trim()
    if (r.code === 0 && short.startsWith(`${remote}/`)) {
      return { ref: short, name: short.slice(remote.length + 1) }
    }
  }
  for (const name of ['main', 'master']) {
    if (await resolveCommit(root, `refs/heads/${name}`)) return { ref: name, name }
  }
  return null
}

export async function listRemotes(root) {
  const out = await git(['remote'], { cwd: root })
  return out
    .split('\n')
    .map((s) => s.trim())
    .filter(Boolean)
    .sort()
}

/**
 * A remote URL without credentials: the userinfo (`user:token@`) of a URL and the `user@` of
 * an scp-like address (`git@host:path`) are removed; nothing else changes.
 */
export function stripUserinfo(url) {
  const s = String(url).trim()
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/)([^/?#]*)(.*)$/.exec(s)
  if (scheme) {
    const authority = scheme[2]
    const at = authority.lastIndexOf('@')
    return scheme[1] + (at === -1 ? authority : authority.slice(at + 1)) + scheme[3]
  }
  const scp = /^[^@/:]+@([^/:]+:.*)$/.exec(s)
  return scp ? scp[1] : s
}

export function sha256Hex(data) {
  return createHash('sha256').update(data).digest('hex')
}

/**
 * The repository identity a review binds:
 * - `remoteFingerprint`: lowercase hex SHA-256 of the UTF-8 credential-free URL of the remote
 *   `origin` (else the alphabetically first remote); with no remote, of the repository root path.
 * - `repositoryId`: the remote's repository name (last path segment without `.git`), else the
 *   root folder's name, reduced to `[A-Za-z0-9._-]`.
 */
export async function repositoryIdentity(root) {
  const remotes = await listRemotes(root)
  const remote = remotes.includes('origin') ? 'origin' : remotes[0]
  let source = root
  let name = basename(root)
  let remoteUrl = null
  if (remote) {
    const r = await runGit(['remote', 'get-url', '--', remote], { cwd: root })
    if (r.code === 0 && r.stdout.trim()) {
      remoteUrl = stripUserinfo(r.stdout.trim())
      source = remoteUrl
      const last = remoteUrl.replace(/[/\\]+$/, '').split(/[/:\\]/).pop()
      if (last) name = last.replace(/\.git$/, '')
    }
  }
  return { remoteFingerprint: sha256Hex(Buffer.from(source, 'utf8')), repositoryId: slug(name, 64) || 'repository', remoteUrl }
}

/** `[A-Za-z0-9._-]` only, at most `max` characters, no leading or trailing separators. */
export function slug(text, max = 60) {
  return String(text)
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '')
    .slice(0, max)
    .replace(/[-.]+$/g, '')
}

/**
 * The patch of `head` over the merge base of `base` and `head`: exact bytes, changed paths
 * and diffstat. Renames are listed as a deletion plus an addition so both paths appear.
 */
export async function computePatch(root, baseSha, headSha) {
  const mb = await runGit(['merge-base', baseSha, headSha], { cwd: root })
  const mergeBase = mb.stdout.trim()
  if (mb.code !== 0 || !mergeBase) throw new CliError('base and head share no history (no merge base)')
  const common = ['--no-color', '--no-ext-diff', '--no-textconv', '--no-renames', '--full-index']
  const patch = await git(['diff', ...common, '--binary', mergeBase, headSha, '--'], { cwd: root, binary: true })
  const numstat = await git(['diff', ...common, '--numstat', '-z', mergeBase, headSha, '--'], { cwd: root })
  const diffstat = []
  for (const rec of numstat.split('\0')) {
    if (!rec) continue
    const m = /^(-|\d+)\t(-|\d+)\t([\s\S]+)$/.exec(rec)
    if (!m) continue
    diffstat.push({ file: m[3], additions: m[1] === '-' ? 0 : Number(m[1]), deletions: m[2] === '-' ? 0 : Number(m[2]) })
  }
  return { mergeBase, patch, diffstat, changedPaths: diffstat.map((d) => d.file) }
}
