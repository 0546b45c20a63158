// Printing: plain words for people, one JSON document for machines (`--json`).

export function printJson(value) {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n')
}

export function println(line = '') {
  process.stdout.write(line + '\n')
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
    lines.push(`state      none: no review yet for ${where}; run \`prism-review review\``)
    return lines
  }
  lines.push(`state      ${st.state}${st.reason ? `: ${st.reason}` : ''}`)
  lines.push(`review     ${st.stored?.reviewId ?? '?'} (revision ${st.revision?.version ?? '?'}) for ${where}`)
  if (st.stored?.digest) lines.push(`digest     ${st.stored.digest}`)
  const d = lastDecisionFor(st.record, st.revision?.version)
  if (d) lines.push(`decision   ${d.state} by ${d.reviewer}${d.note ? `: "${d.note}"` : ''}`)
  return lines
}
