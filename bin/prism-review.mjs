#!/usr/bin/env node
// prism-review: gate an agent's patch on human review, from the command line.
// JavaScript over the package's public API (`import('prism-review')`) on the embedded
// SQLite store. Run `prism-review help` for the commands.
import { parseArgs } from 'node:util'
import { userInfo } from 'node:os'
import { UsageError, CliError, describeError, fromParseArgsError } from './lib/errors.mjs'
import { openStore, checkOutputRedactor, existingLinkSecret, dbPathFor } from './lib/context.mjs'
import { readGitState, reviewIds, submitReview, assertReviewFits, deriveStatus, decide, history, getRecord, generationIds, STATUS_STATES } from './lib/review.mjs'
import { parseCheckSpec, parseTimeout, runChecks } from './lib/checks.mjs'
import { runGit } from './lib/git.mjs'
import { printJson, println, statusJson, statusLines, changeLines, stateWord, checkWord, short } from './lib/output.mjs'

// The help text and `help --json` come from these tables (one source).
const COMMAND_HELP = [
  ['demo', 'walk through a whole review in a temporary git repository'],
  ['review', 'store the patch of head over base and attach or revise its review'],
  ['status', 'the review state for the current head and base'],
  ['approve', 'approve the current revision'],
  ['reject', 'reject the current revision'],
  ['log', 'revisions and decisions of the current review'],
  ['serve', 'serve the artifact HTTP API on 127.0.0.1 (token: PRISM_REVIEW_TOKEN)'],
  ['help', 'this text (--json: as JSON)'],
]
const TARGETED = ['review', 'status', 'approve', 'reject', 'log']
const EVERY = COMMAND_HELP.map(([name]) => name)
// [commands, [[flag, value, description], …]]
const OPTION_GROUPS = [
  [
    TARGETED,
    [
      ['--base', '<ref>', 'what the patch is over (default: origin/HEAD, else main, else master)'],
      ['--head', '<ref>', "the patch's tip (default: HEAD)"],
      ['--db', '<path>', 'the database (default: .prism/review.db at the repository root); only review creates it'],
      ['--thread', '<id>', 'the review thread (default: git-<head branch>)'],
    ],
  ],
  [
    ['review'],
    [
      ['--check', '"<name>=<cmd>"', "run a check, record its exit code and output summary (repeatable); without --check the previous revision's checks are kept"],
      ['--no-checks', null, "record no checks (drops the previous revision's)"],
      ['--check-timeout', '<time>', 'stop a check after this long: 90, 90s, 10m, 1h (default 5m); recorded as exit 124'],
    ],
  ],
  [['status'], [['--require', '<state>', 'exit 1 unless the state is <state>: pending, accepted, rejected, superseded or none']]],
  [
    ['approve', 'reject'],
    [
      ['--note', '<text>', "the reviewer's note"],
      ['--reviewer', '<kind:id>', 'who decides (default: user:<git user.email>)'],
    ],
  ],
  [
    ['serve'],
    [
      ['--db', '<path>', 'the database (default: .prism/review.db at the repository root)'],
      ['--port', '<n>', 'the port (default 7420; 0 picks a free one)'],
    ],
  ],
  [
    EVERY,
    [
      ['--json', null, 'print one JSON document instead of plain words'],
      ['-h, --help', null, 'this text'],
      ['--version', null, 'the version of prism-review'],
    ],
  ],
]
const EXIT_CODES = [
  [0, 'success'],
  [1, 'failure, or status --require not met'],
  [2, 'bad usage'],
  [130, 'interrupted by SIGINT while a check ran (nothing recorded)'],
  [143, 'interrupted by SIGTERM while a check ran (nothing recorded)'],
]

function listWords(names) {
  return names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`
}

function helpText() {
  const lines = ["prism-review: gate an agent's patch on human review", '', 'Usage: prism-review <command> [options]', '', 'Commands:']
  for (const [name, text] of COMMAND_HELP) lines.push(`  ${name.padEnd(24)}  ${text}`)
  for (const [commands, options] of OPTION_GROUPS) {
    lines.push('', commands === EVERY ? 'Options of every command:' : `Options of ${listWords(commands)}:`)
    for (const [flag, value, text] of options) lines.push(`  ${`${flag}${value ? ` ${value}` : ''}`.padEnd(24)}  ${text}`)
  }
  lines.push('', `Exit codes: ${EXIT_CODES.map(([c, t]) => `${c} ${t}`).join('; ')}.`, '')
  return lines.join('\n')
}

async function packageVersion() {
  const { createRequire } = await import('node:module')
  return createRequire(import.meta.url)('../package.json').version
}

async function helpJson() {
  return {
    name: 'prism-review',
    version: await packageVersion(),
    usage: 'prism-review <command> [options]',
    commands: COMMAND_HELP.map(([name, description]) => ({ name, description })),
    options: OPTION_GROUPS.flatMap(([commands, options]) =>
      options.map(([flag, value, description]) => ({ flag, ...(value ? { value } : {}), commands, description })),
    ),
    exitCodes: EXIT_CODES.map(([code, meaning]) => ({ code, meaning })),
  }
}

async function printHelp(values) {
  if (values && values.json) printJson(await helpJson())
  else process.stdout.write(helpText())
  return 0
}

const COMMON = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
}
const TARGET = {
  base: { type: 'string' },
  head: { type: 'string' },
  db: { type: 'string' },
  thread: { type: 'string' },
}
const DECIDE = { ...TARGET, note: { type: 'string' }, reviewer: { type: 'string' } }
const REVIEW = { ...TARGET, check: { type: 'string', multiple: true }, 'no-checks': { type: 'boolean' }, 'check-timeout': { type: 'string' } }

const COMMANDS = {
  demo: { options: {}, run: cmdDemo },
  review: { options: REVIEW, run: cmdReview },
  status: { options: { ...TARGET, require: { type: 'string' } }, run: cmdStatus },
  approve: { options: DECIDE, run: (v) => cmdDecide('approve', v) },
  reject: { options: DECIDE, run: (v) => cmdDecide('reject', v) },
  log: { options: TARGET, run: cmdLog },
  serve: { options: { db: { type: 'string' }, port: { type: 'string' } }, run: cmdServe },
  help: { options: {}, run: printHelp },
}

function parseCommandLine(argv) {
  const globals = []
  let i = 0
  while (i < argv.length && ['--json', '-h', '--help', '--version'].includes(argv[i])) globals.push(argv[i++])
  const name = argv[i]
  if (name === undefined) {
    const values = { json: globals.includes('--json') }
    if (globals.includes('--version')) return { name: 'version', values }
    if (globals.includes('-h') || globals.includes('--help')) return { name: 'help', values }
    throw new UsageError('missing command (see prism-review help)')
  }
  if (name.startsWith('-')) throw new UsageError(`unknown option ${name.replace(/=.*$/, '')} (see prism-review help)`)
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : null
  if (!command) throw new UsageError(`unknown command "${name}" (see prism-review help)`)
  let values
  try {
    ;({ values } = parseArgs({
      args: [...globals.filter((g) => g !== '--version'), ...argv.slice(i + 1)],
      options: { ...COMMON, ...command.options },
      strict: true,
      allowPositionals: false,
    }))
  } catch (err) {
    throw fromParseArgsError(err, name)
  }
  if (values.help) return { name: 'help', values }
  for (const [k, v] of Object.entries(values)) {
    if (typeof v === 'string' && v === '' && k !== 'note') throw new UsageError(`option --${k} needs a non-empty value`)
  }
  return { name, values, command }
}

function checkThread(values) {
  if (values.thread !== undefined && !/^[A-Za-z0-9._-]{1,128}$/.test(values.thread)) {
    throw new UsageError(`--thread must be 1-128 characters of letters, digits, . _ -, got "${values.thread}"`)
  }
}

/**
 * Reads the git state, opens the store and runs `fn(store, gs, ids)`. The read-only
 * commands (`create: false`) create nothing: `store` is null when the default database does
 * not exist yet, and a `--db` that does not exist is an error.
 */
async function withTarget(values, fn, { create = false } = {}) {
  checkThread(values)
  const gs = await readGitState({ cwd: process.cwd(), base: values.base, head: values.head })
  const ids = reviewIds(gs, values.thread)
  const store = await openStore({ root: gs.root, db: values.db, create })
  try {
    return await fn(store, gs, ids)
  } finally {
    await store?.close()
  }
}

async function cmdReview(values) {
  const specs = (values.check ?? []).map(parseCheckSpec)
  const names = new Set()
  for (const s of specs) {
    if (names.has(s.name)) throw new UsageError(`--check "${s.name}" is given twice`)
    names.add(s.name)
  }
  if (values['no-checks'] && specs.length > 0) throw new UsageError('--no-checks and --check cannot be given together')
  const timeoutMs = parseTimeout(values['check-timeout'])
  checkThread(values)
  const gs = await readGitState({ cwd: process.cwd(), base: values.base, head: values.head })
  const ids = reviewIds(gs, values.thread)
  if (gs.patch.length === 0) {
    throw new CliError(`nothing to review: ${gs.headName} (${short(gs.headSha)}) has no changes over ${gs.baseRef}`)
  }
  // A patch too large to review is refused before any check runs or anything is written.
  await assertReviewFits(gs, ids)
  // Checks run before the store is opened: interrupting them leaves nothing behind.
  const redact = await checkOutputRedactor([existingLinkSecret(dbPathFor({ root: gs.root, db: values.db }))])
  const ran = await runChecks(specs, gs.root, { timeoutMs, redact })
  const store = await openStore({ root: gs.root, db: values.db, create: true })
  let r
  try {
    r = await submitReview(store, gs, ids, { checks: ran, clear: Boolean(values['no-checks']) })
  } finally {
    await store.close()
  }
  const st = r.status
  const checks = r.checks.checks
  if (values.json) {
    printJson({
      action: r.action,
      ...(r.previous ? { previous: r.previous } : {}),
      ...(r.changes ? { changes: r.changes } : {}),
      ...statusJson(st),
      patch: { uri: r.patchUri, sha256: gs.patchSha, bytes: gs.patch.length },
      changedPaths: gs.changedPaths,
      diffstat: gs.diffstat,
      checks,
      checksSource: r.checks.source,
    })
    return 0
  }
  const adds = gs.diffstat.reduce((n, d) => n + d.additions, 0)
  const dels = gs.diffstat.reduce((n, d) => n + d.deletions, 0)
  const verb = {
    attached: 'attached a new review',
    revised: `revised the review (revision ${st.revision?.version})`,
    'rolled over': `the previous artifact is full: continued the review in artifact ${st.ids.artifactId}`,
    unchanged: 'the review is unchanged',
  }[r.action]
  println(`${verb} for ${gs.headName} (${short(gs.headSha)}) over ${gs.baseRef} (${short(gs.mergeBase)})`)
  if (r.previous && r.changes) {
    const lines = changeLines(r.changes)
    println(`changed    since revision ${r.previous.revision}: ${lines[0]}`)
    for (const l of lines.slice(1)) println(`           ${l}`)
  }
  println(`review     ${r.review.reviewId}`)
  println(`digest     ${r.review.digest}`)
  println(`state      ${stateWord(st.state)}`)
  println(`patch      ${r.patchUri} (${gs.patch.length} bytes)`)
  println(`changes    ${gs.changedPaths.length} file(s), +${adds} -${dels}`)
  const from = r.checks.source === 'kept' ? ` (kept from revision ${r.previous?.revision}, not run again; --no-checks drops them)` : ''
  for (const c of checks) println(`check      ${c.name}: ${checkWord(c)}${from}`)
  if (r.checks.source === 'cleared' && r.previous) println('checks     none (--no-checks)')
  println(`thread     ${st.ids.threadId}, artifact ${st.ids.artifactId}`)
  return 0
}

async function cmdStatus(values) {
  if (values.require !== undefined && !STATUS_STATES.includes(values.require)) {
    throw new UsageError(`--require must be one of ${STATUS_STATES.join(', ')}, got "${values.require}"`)
  }
  return withTarget(values, async (store, gs, ids) => {
    const st = await deriveStatus(store, gs, ids)
    const ok = values.require === undefined || st.state === values.require
    if (values.json) printJson(values.require === undefined ? statusJson(st) : { ...statusJson(st), required: values.require, ok })
    else for (const l of statusLines(st)) println(l)
    if (!ok) {
      process.stderr.write(`prism-review: state is ${st.state}, not ${values.require}\n`)
      return 1
    }
    return 0
  })
}

async function defaultReviewer(cwd) {
  const r = await runGit(['config', '--get', 'user.email'], { cwd })
  const email = r.code === 0 ? r.stdout.trim() : ''
  if (email) return `user:${email}`
  let name = 'unknown'
  try {
    name = userInfo().username || name
  } catch {}
  return `user:${name}`
}

async function cmdDecide(decision, values) {
  if (values.reviewer !== undefined && !/^[A-Za-z0-9_.-]+:\S.*$/.test(values.reviewer)) {
    throw new UsageError(`--reviewer must look like <kind>:<id> (for example user:alice), got "${values.reviewer}"`)
  }
  return withTarget(values, async (store, gs, ids) => {
    const reviewer = values.reviewer ?? (await defaultReviewer(gs.root))
    const r = await decide(store, gs, ids, decision, { note: values.note, reviewer })
    if (values.json) {
      printJson({ decision, reviewer, ...(values.note !== undefined ? { note: values.note } : {}), ...statusJson(r.status) })
      return 0
    }
    println(`${decision === 'approve' ? 'approved' : 'rejected'} revision ${r.status.revision?.version} of ${r.status.stored?.reviewId} as ${reviewer}`)
    for (const l of statusLines(r.status)) println(l)
    return 0
  })
}

async function cmdLog(values) {
  return withTarget(values, async (store, gs, ids) => {
    const st = await deriveStatus(store, gs, ids)
    // Every artifact of the review, oldest first (a full artifact continues in the next).
    const events = []
    for (let n = 1; st.record && n <= st.ids.generation; n++) {
      const gen = generationIds(ids, n)
      const record = n === st.ids.generation ? st.record : await getRecord(store.service, gen)
      if (record) for (const e of history(record)) events.push({ artifactId: gen.artifactId, ...e })
    }
    if (values.json) {
      printJson({ ...statusJson(st), history: events })
      return 0
    }
    if (!st.record) {
      for (const l of statusLines(st)) println(l)
      return 0
    }
    println(`history of ${gs.headName} over ${gs.baseRef} (thread ${st.ids.threadId})`)
    let artifact = null
    for (const e of events) {
      if (e.artifactId !== artifact) {
        artifact = e.artifactId
        println(`artifact ${artifact}`)
      }
      const at = e.at ? `${e.at}  ` : ''
      if (e.kind === 'revision') {
        const checks = e.checks.length ? `, checks ${e.checks.map((c) => `${c.name}=${c.exitCode}`).join(' ')}` : ''
        println(`  ${at}revision ${e.version}: head ${short(e.head)} over ${short(e.base)}, patch ${short(String(e.hash).replace(/^sha256:/, ''))}${checks}`)
      } else {
        println(`  ${at}revision ${e.version} ${e.state} by ${e.reviewer}${e.note ? `: "${e.note}"` : ''}`)
      }
    }
    println(`now: ${statusLines(st)[0].replace(/^state\s+/, '')}`)
    return 0
  })
}

async function cmdServe(values) {
  const { serve } = await import('./lib/serve.mjs')
  return serve(values)
}

async function cmdDemo(values) {
  const { demo } = await import('./lib/demo.mjs')
  return demo(values)
}

async function main(argv) {
  const parsed = parseCommandLine(argv)
  if (parsed.name === 'version') {
    const version = await packageVersion()
    if (parsed.values.json) printJson({ name: 'prism-review', version })
    else println(version)
    return 0
  }
  if (parsed.name === 'help') return printHelp(parsed.values)
  return (await parsed.command.run(parsed.values)) ?? 0
}

function fail(err) {
  const { line, exitCode } = describeError(err)
  process.stderr.write(line + '\n')
  process.exitCode = exitCode
}

// A reader that closes the pipe early (`prism-review demo | head -1`) is not an error: the
// command finishes (and cleans up) with nothing more printed.
process.stdout.on('error', (err) => {
  if (err && err.code === 'EPIPE') {
    process.stdout.write = () => true
    return
  }
  fail(err)
})
// Nothing escapes as a stack trace, not even a failure outside the main flow.
process.on('uncaughtException', (err) => {
  fail(err)
  process.exit(process.exitCode || 1)
})

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (err) => fail(err),
)
