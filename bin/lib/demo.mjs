// `prism-review demo`: one whole review, in plain words, in a temporary git repository it
// creates and removes. It uses the same code paths as the commands, over the public API.
import { mkdtempSync, writeFileSync, mkdirSync, rmSync } from 'node:fs'
import { execFile } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join, relative, isAbsolute, resolve as resolvePath } from 'node:path'
import { git } from './git.mjs'
import { openStore, requireApi, checkOutputRedactor } from './context.mjs'
import { readGitState, reviewIds, submitReview, deriveStatus, decide, short } from './review.mjs'
import { runChecks } from './checks.mjs'
import { printJson, println } from './output.mjs'

/**
 * Parses what `node --check <file>` prints on a syntax error into RawDiagnostic entries:
 *
 *     /abs/path/file.js:3          ← file:line (1-based)
 *       return a +;                ← the source line
 *                 ^                ← caret under the column
 *     (blank)
 *     SyntaxError: Unexpected token ';'
 *
 * `line`/`character` are zero-based, as in LSP; `file` is relative to `root`.
 */
export function parseNodeCheck(stderr, root) {
  const lines = String(stderr).replace(/\r\n?/g, '\n').split('\n')
  const out = []
  for (let i = 0; i < lines.length; i++) {
    const loc = /^(.+):(\d+)$/.exec(lines[i])
    if (!loc) continue
    let character = 0
    let message = null
    let code
    for (let j = i + 1; j < Math.min(lines.length, i + 8); j++) {
      const caret = /^(\s*)\^+\s*$/.exec(lines[j])
      if (caret) character = caret[1].length
      const err = /^([A-Za-z]*Error): (.+)$/.exec(lines[j])
      if (err) {
        code = err[1]
        message = err[2]
        break
      }
    }
    if (!message || /^node:/.test(loc[1])) continue
    const abs = isAbsolute(loc[1]) ? loc[1] : resolvePath(root, loc[1])
    const file = relative(root, abs).split('\\').join('/')
    if (file === '' || file.startsWith('../') || isAbsolute(file)) continue
    out.push({
      file,
      line: Number(loc[2]) - 1,
      character,
      severity: 'error',
      message,
      source: 'node --check',
      code,
    })
  }
  return out
}

function nodeCheck(file, cwd) {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--check', file], { cwd, encoding: 'utf8' }, (err, _stdout, stderr) => {
      resolve({ exitCode: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stderr })
    })
  })
}

export async function demo(values) {
  const json = Boolean(values.json)
  const steps = []
  const say = (step, text, data = {}) => {
    steps.push({ step, text, ...data })
    if (!json) println(`${String(steps.length).padStart(2)}. ${text}`)
  }
  const detail = (text) => {
    const last = steps[steps.length - 1]
    ;(last.details ??= []).push(text)
    if (!json) println(`      ${text}`)
  }
  const api = await requireApi('normalizeDiagnostics', 'diagnosticDelta', 'createCodingPatchReviewManifest', 'createArtifactService')
  const dir = mkdtempSync(join(tmpdir(), 'prism-review-demo-'))
  let store
  try {
    const g = (...args) => git(args, { cwd: dir })
    await g('init', '--quiet', '--initial-branch=main')
    await g('config', 'user.name', 'Prism Demo')
    await g('config', 'user.email', 'demo@prism-review.invalid')
    await g('config', 'commit.gpgsign', 'false')
    mkdirSync(join(dir, 'src'))
    writeFileSync(join(dir, 'src', 'greet.js'), "function greet(name) {\n  return 'hello ' + name\n}\n\nmodule.exports = { greet }\n")
    await g('add', '-A')
    await g('commit', '--quiet', '-m', 'initial commit')
    say('repository', `created a git repository in ${dir} with one commit on main`, { dir })

    await g('switch', '--quiet', '-c', 'agent/farewell')
    writeFileSync(
      join(dir, 'src', 'greet.js'),
      "function greet(name) {\n  return 'hello ' + name\n}\n\nfunction farewell(name) {\n  return 'bye ' + name\n}\n\nmodule.exports = { greet, farewell }\n",
    )
    await g('commit', '--quiet', '-am', 'agent: add farewell()')
    say('commit', 'the "agent" committed farewell() on branch agent/farewell')

    let gs = await readGitState({ cwd: dir, base: 'main' })
    const ids = reviewIds(gs)
    store = await openStore({ root: gs.root })
    const checkSpecs = [{ name: 'syntax', command: `"${process.execPath}" --check src/greet.js` }]
    const redact = await checkOutputRedactor([store.secret])
    const checks = await runChecks(checkSpecs, gs.root, { redact })
    let r = await submitReview(store, gs, ids, { checks })
    say('review', `attached review ${r.review.reviewId} for agent/farewell over main (digest ${short(r.review.digest)})`, {
      reviewId: r.review.reviewId,
      digest: r.review.digest,
      patchSha256: gs.patchSha,
      patchUri: r.patchUri,
    })
    detail(`patch: ${gs.patch.length} bytes, sha256 ${short(gs.patchSha)}, body stored as ${r.patchUri}`)
    detail('the database keeps only that reference and the digest, never the body')
    for (const d of gs.diffstat) detail(`changed: ${d.file} (+${d.additions} -${d.deletions})`)
    detail(`check "syntax" (node --check src/greet.js): exit ${checks[0].exitCode}`)
    say('pending', `state is ${r.status.state}: nobody has decided yet`, { state: r.status.state })

    let d = await decide(store, gs, ids, 'approve', { reviewer: 'user:reviewer', note: 'looks good' })
    say('approve', `user:reviewer approved revision ${d.status.revision.version} with the note "looks good"`)
    say('accepted', `state is ${d.status.state}: this exact patch, on this base and head, is accepted`, { state: d.status.state })

    writeFileSync(
      join(dir, 'src', 'greet.js'),
      "function greet(name) {\n  return 'hello ' + name\n}\n\nfunction farewell(name) {\n  return 'goodbye ' + name\n}\n\nmodule.exports = { greet, farewell }\n",
    )
    await g('commit', '--quiet', '--amend', '-am', 'agent: add farewell()')
    gs = await readGitState({ cwd: dir, base: 'main' })
    let st = await deriveStatus(store, gs, ids)
    say('amend', `the agent amended its commit; head is now ${short(gs.headSha)}`)
    say('superseded', `state is ${st.state}: ${st.reason}`, { state: st.state, reason: st.reason })

    r = await submitReview(store, gs, ids, { checks: await runChecks(checkSpecs, gs.root, { redact }) })
    say('revise', `reviewed the amended patch: revision ${r.status.revision.version}, state ${r.status.state} until someone decides again`, {
      state: r.status.state,
      revision: r.status.revision.version,
    })

    // Diagnostics from a real check: `node --check` on a broken file.
    writeFileSync(join(dir, 'src', 'broken.cjs'), "function add(a, b) {\n  return a +;\n}\n\nmodule.exports = { add }\n")
    const first = await nodeCheck('src/broken.cjs', dir)
    const raw = parseNodeCheck(first.stderr, dir)
    const before = api.normalizeDiagnostics(raw, { workspaceRoot: dir, generation: 1 })
    say('check', `ran node --check src/broken.cjs: exit ${first.exitCode}, ${before.length} diagnostic(s) (its "file:line" output parsed, then normalized)`, {
      exitCode: first.exitCode,
      diagnostics: before,
    })
    for (const x of before) {
      detail(`${x.file}:${x.line + 1}:${x.character + 1} ${x.severity} ${x.code ?? ''} ${x.message}`.replace(/\s+/g, ' ').trimEnd())
    }
    writeFileSync(join(dir, 'src', 'broken.cjs'), 'function add(a, b) {\n  return a + b\n}\n\nmodule.exports = { add }\n')
    const second = await nodeCheck('src/broken.cjs', dir)
    const after = api.normalizeDiagnostics(parseNodeCheck(second.stderr, dir), { workspaceRoot: dir, generation: 2 })
    const delta = api.diagnosticDelta({ next: after, previous: before, generation: 2 })
    say(
      'delta',
      `fixed the file and ran the check again: exit ${second.exitCode}; delta: ${delta.added.length} added, ${delta.removed.length} removed, ${delta.unchanged.length} unchanged`,
      { exitCode: second.exitCode, delta },
    )
    for (const x of delta.removed) detail(`removed: ${x.file}:${x.line + 1}:${x.character + 1} ${x.message}`)
    for (const x of delta.added) detail(`added: ${x.file}:${x.line + 1}:${x.character + 1} ${x.message}`)
    say('done', 'done: the temporary repository is removed')
    if (json) printJson({ ok: true, steps })
    return 0
  } finally {
    if (store) await store.close().catch(() => {})
    rmSync(dir, { recursive: true, force: true })
  }
}
