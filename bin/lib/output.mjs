// Printing: plain words for people, one JSON document for machines (`--json`).
// Colours only when stdout is a terminal and NO_COLOR is unset (https://no-color.org);
// progress for long steps only when stderr is a terminal.

export function printJson(value) {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n')
}

export function println(line = '') {
  process.stdout.write(line + '\n')
}

function colourWanted(stream, env = process.env) {
  if (!stream.isTTY) return false
  if (typeof env.NO_COLOR === 'string' && env.NO_COLOR !== '') return false
  return env.TERM !== 'dumb'
}

const SGR = { red: 31, green: 32, yellow: 33, cyan: 36, dim: 2, bold: 1 }

/** `text` in `colour` when stdout shows colours, else unchanged. */
export function paint(colour, text) {
  if (!colourWanted(process.stdout)) return text
  return `\u001b[${SGR[colour]}m${text}\u001b[0m`
}

const STATE_COLOURS = { accepted: 'green', rejected: 'red', pending: 'yellow', superseded: 'yellow', none: 'dim' }

/** A review state word, coloured by what it means. */
export function stateWord(state) {
  return STATE_COLOURS[state] ? paint(STATE_COLOURS[state], state) : state
}

/** A check's result in words: `ok`, `failed (exit 3)`, `timed out after 5m`. */
export function checkWord(check) {
  if (check.exitCode === 0) return paint('green', 'ok')
  const timedOut = typeof check.summary === 'string' && check.summary.startsWith('timed out')
  return paint('red', timedOut ? check.summary.split('\n')[0] : `failed (exit ${check.exitCode})`)
}

/**
 * A progress line on stderr for a step that may take a while, shown after `delayMs` and
 * updated every second with the elapsed time; nothing at all when stderr is not a terminal.
 * `done()` clears it.
 */
export function progress(text, { delayMs = 250 } = {}) {
  const stream = process.stderr
  if (!stream.isTTY) return { done() {} }
  const started = Date.now()
  let shown = false
  const draw = () => {
    shown = true
    const secs = Math.floor((Date.now() - started) / 1000)
    stream.write(`\r\u001b[2Kprism-review: ${text}${secs > 0 ? ` (${secs} s)` : ''}…`)
  }
  let interval = null
  const first = setTimeout(() => {
    draw()
    interval = setInterval(draw, 1000)
    interval.unref?.()
  }, delayMs)
  first.unref?.()
  return {
    done() {
      clearTimeout(first)
      if (interval) clearInterval(interval)
      if (shown) stream.write('\r\u001b[2K')
      shown = false
    },
  }
}

/** The JSON shape of a derived status (no raw records beyond what a script needs). */
export function statusJson(st) {
  const out = {
    state: st.state,
    upToDate: st.upToDate,
    threadId: st.ids.threadId,
    artifactId: st.ids.artifactId,
    base: { ref: st.gs.baseRef, commit: st.gs.baseSha, mergeBase: st.gs.mergeBase },
    head: { ref: st.gs.headName, commit: st.gs.headSha },
    patchSha256: st.gs.patchSha,
    identity: st.gs.identity,
  }
  if (st.reason) out.reason = st.reason
  if (st.outcome) out.outcome = st.outcome
  if (st.stored) {
    out.reviewId = st.stored.reviewId
    out.digest = st.stored.digest
  }
  if (st.revision) out.revision = st.revision.version
  if (st.record) {
    const decision = lastDecisionFor(st.record, st.revision?.version)
    if (decision) out.decision = decision
  }
  return out
}

export function lastDecisionFor(record, version) {
  const list = Array.isArray(record?.approvals) ? record.approvals.filter((a) => a.version === version) : []
  const a = list[list.length - 1]
  if (!a) return null
  const d = { state: a.state, reviewer: a.reviewer }
  if (a.note !== undefined) d.note = a.note
  const at = a.decidedAt ?? a.at ?? a.createdAt
  if (at !== undefined) d.at = at
  return d
}

export function short(sha) {
  return typeof sha === 'string' ? sha.slice(0, 12) : String(sha)
}

/** Plain-words lines describing a status. */
export function statusLines(st) {
  const lines = []
  const where = `${st.gs.headName} (${short(st.gs.headSha)}) over ${st.gs.baseRef} (${short(st.gs.mergeBase)})`
  if (st.state === 'none') {
    lines.push(`state      ${stateWord('none')}: no review yet for ${where}; run \`prism-review review\``)
    return lines
  }
  lines.push(`state      ${stateWord(st.state)}${st.reason ? `: ${st.reason}` : ''}`)
  lines.push(`review     ${st.stored?.reviewId ?? '?'} (revision ${st.revision?.version ?? '?'}) for ${where}`)
  if (st.stored?.digest) lines.push(`digest     ${st.stored.digest}`)
  const d = lastDecisionFor(st.record, st.revision?.version)
  if (d) lines.push(`decision   ${d.state} by ${d.reviewer}${d.note ? `: "${d.note}"` : ''}`)
  return lines
}

/** Plain-words lines for what changed since the previous revision (see review.mjs `changesBetween`). */
export function changeLines(changes) {
  const lines = []
  const arrow = (c, f = short) => `${f(c.from)} → ${f(c.to)}`
  if (changes.head) lines.push(`head ${arrow(changes.head)}`)
  if (changes.base) lines.push(`base ${arrow(changes.base)} (rebased)`)
  if (changes.patch) lines.push(`patch sha256 ${arrow(changes.patch)}`)
  for (const [field, c] of Object.entries(changes.identity ?? {})) lines.push(`repository ${field} ${arrow(c, (v) => JSON.stringify(v ?? null))}`)
  if (changes.paths) {
    const list = (l) => (l.length > 5 ? `${l.slice(0, 5).join(', ')}, … ${l.length - 5} more` : l.join(', '))
    if (changes.paths.added.length) lines.push(`paths added (${changes.paths.added.length}): ${list(changes.paths.added)}`)
    if (changes.paths.removed.length) lines.push(`paths removed (${changes.paths.removed.length}): ${list(changes.paths.removed)}`)
  }
  if (changes.checks) {
    const exit = (c) => (c === undefined ? 'none' : c.exitCode === 0 ? 'ok' : `exit ${c.exitCode}`)
    for (const n of changes.checks.added) lines.push(`check ${n.name} added (${exit(n)})`)
    for (const n of changes.checks.removed) lines.push(`check ${n.name} removed (was ${exit(n)})`)
    for (const c of changes.checks.changed) {
      lines.push(c.from.exitCode === c.to.exitCode ? `check ${c.name} output changed (${exit(c.to)})` : `check ${c.name} ${exit(c.from)} → ${exit(c.to)}`)
    }
  }
  if (lines.length === 0) lines.push('the review manifest changed')
  return lines
}
