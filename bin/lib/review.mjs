// The review workflow over the public API: git state → manifest → artifact record → state.
import { UsageError, CliError } from './errors.mjs'
import {
  repoRoot,
  resolveCommit,
  currentBranch,
  defaultBranch,
  repositoryIdentity,
  listRemotes,
  computePatch,
  sha256Hex,
  slug,
} from './git.mjs'
import { LOCAL_OWNERSHIP, SERVICE_LIMITS, storePatch, requireApi } from './context.mjs'
import { runGit } from './git.mjs'
import { progress } from './output.mjs'

export const STATES = Object.freeze(['pending', 'accepted', 'rejected', 'superseded'])
/** Every state `status` reports (`none`: nothing reviewed yet for this head and base). */
export const STATUS_STATES = Object.freeze([...STATES, 'none'])

/** `assertCodingPatchAccepted` rules (and the accepted/rejected states) in plain words. */
const REASON_WORDS = {
  no_decision: 'nobody has decided on this revision yet',
  unknown_decision: 'the recorded decision is neither approved nor rejected',
  approved: 'approved, and the patch, base, head and repository are unchanged',
  rejected: 'rejected',
  patch_changed: 'no revision carries this patch',
  newer_revision: 'a newer revision was attached after this one',
  review_missing: 'the revision carries no review manifest',
  identity_changed: 'the repository identity, base or head changed',
  review_digest_changed: 'the review manifest changed',
}

export function short(sha) {
  return typeof sha === 'string' ? sha.slice(0, 12) : String(sha)
}

/**
 * Everything a review binds, read from git in the repository around `cwd`.
 * `base` defaults to the default branch (origin/HEAD, else main or master).
 */
export async function readGitState({ cwd, base, head }) {
  const root = await repoRoot(cwd)
  const any = await runGit(['rev-list', '-n', '1', '--all'], { cwd: root })
  if (any.code === 0 && any.stdout.trim() === '') {
    throw new UsageError('missing base: this repository has no commits yet (commit the work to review on a branch, then run prism-review review)')
  }
  const dflt = await defaultBranch(root)
  let baseRef = base
  if (baseRef === undefined) {
    if (!dflt) throw new UsageError('missing base: pass --base <ref> (no origin/HEAD, main or master to default to)')
    baseRef = dflt.ref
  }
  const baseSha = await resolveCommit(root, baseRef)
  if (!baseSha) throw new UsageError(`missing base: "${baseRef}" is not a commit in this repository`)
  const headRef = head ?? 'HEAD'
  const headSha = await resolveCommit(root, headRef)
  if (!headSha) throw new UsageError(`unknown head: "${headRef}" is not a commit in this repository`)
  const headName = headRef === 'HEAD' ? ((await currentBranch(root)) ?? 'HEAD') : headRef
  const baseName = branchName(baseRef, await listRemotes(root))
  const step = progress(`computing the patch of ${headName} over ${baseRef}`)
  let computed
  try {
    computed = await computePatch(root, baseSha, headSha)
  } finally {
    step.done()
  }
  const { mergeBase, patch, diffstat, changedPaths } = computed
  const identity = await repositoryIdentity(root)
  return {
    root,
    baseRef,
    baseName,
    baseSha,
    headRef,
    headName,
    headSha,
    mergeBase,
    patch,
    patchSha: sha256Hex(patch),
    diffstat,
    changedPaths,
    identity: {
      repositoryId: identity.repositoryId,
      remoteFingerprint: identity.remoteFingerprint,
      defaultBranch: dflt ? dflt.name : baseName,
    },
  }
}

/** `origin/main`, `refs/remotes/origin/main`, `refs/heads/main` → `main`: the branch a ref names. */
export function branchName(ref, remotes) {
  let name = ref.replace(/^refs\/heads\//, '').replace(/^refs\/remotes\//, '')
  for (const r of remotes) {
    if (name.startsWith(`${r}/`) && name.length > r.length + 1) {
      name = name.slice(r.length + 1)
      break
    }
  }
  return name
}

/**
 * The thread and artifact a review lives in. The thread defaults to one per head branch
 * (`git-<head>`); the artifact is one per (base branch name, head name; `origin/main` and
 * `main` are the same base), so amending or rebasing
 * the branch revises the same artifact and supersedes its earlier decisions.
 */
export function reviewIds(gs, thread) {
  const threadId = thread ?? `git-${slug(gs.headName) || 'head'}`
  const artifactId = `patch-${slug(gs.headName, 40) || 'head'}-${sha256Hex(`${gs.baseName}\n${gs.headName}`).slice(0, 10)}`
  return { threadId, artifactId }
}

/** Builds the review manifest for the git state (the library computes and bounds it). */
export async function buildManifest(gs, ids, { checks = [], diagnostics, reviewId, createdAt, patchUri } = {}) {
  const api = await requireApi('createCodingPatchReviewManifest')
  const input = {
    threadId: ids.threadId,
    artifactId: ids.artifactId,
    identity: gs.identity,
    base: gs.mergeBase,
    head: gs.headSha,
    patch: {
      kind: 'patch',
      uri: patchUri ?? `.prism/patches/${gs.patchSha}.patch`,
      sha256: gs.patchSha,
      bytes: gs.patch.length,
    },
    changedPaths: gs.changedPaths,
    diffstat: gs.diffstat,
    checks,
    // The whole manifest is stored in the revision's preview: its cap is the preview's.
    limits: { maxManifestBytes: MANIFEST_BYTES },
  }
  if (diagnostics !== undefined) input.diagnostics = diagnostics
  if (reviewId !== undefined) input.reviewId = reviewId
  if (createdAt !== undefined) input.createdAt = createdAt
  return api.createCodingPatchReviewManifest(input)
}

function isNotFound(err) {
  return err && err.code === 'ERR_PRISM_ARTIFACT' && err.reason === 'not_found'
}

/** The artifact record `ids` names, or null when there is none. */
export async function getRecord(service, ids) {
  try {
    return await service.get({ ownership: LOCAL_OWNERSHIP, threadId: ids.threadId, artifactId: ids.artifactId })
  } catch (err) {
    if (isNotFound(err)) return null
    throw err
  }
}

/** At most this many artifacts per review (each full one rolls over to the next). */
const MAX_GENERATIONS = 32

/**
 * A review's artifacts: `<artifactId>`, then `<artifactId>-2`, `-3`, … once one is full
 * (its revision or record cap reached). The current one is the last that exists:
 * `{ record, ids }`, with `record` null (and generation 1) before the first review.
 */
export async function findRecord(service, baseIds) {
  let found = { record: null, ids: { ...baseIds, generation: 1 } }
  for (let n = 1; n <= MAX_GENERATIONS; n++) {
    const ids = generationIds(baseIds, n)
    const record = await getRecord(service, ids)
    if (!record) break
    found = { record, ids }
  }
  return found
}

export function generationIds(baseIds, n) {
  return { threadId: baseIds.threadId, artifactId: n <= 1 ? baseIds.artifactId : `${baseIds.artifactId}-${n}`, generation: n }
}

function isFull(err) {
  return err && err.code === 'ERR_PRISM_ARTIFACT' && (err.reason === 'too_many_revisions' || err.reason === 'record_too_large')
}

export function revisionsOf(record) {
  const list = Array.isArray(record?.revisions) ? [...record.revisions] : []
  return list.sort((a, b) => a.version - b.version)
}

export function latestRevision(record) {
  const list = revisionsOf(record)
  return list.length > 0 ? list[list.length - 1] : null
}

export function approvalsOf(record) {
  return Array.isArray(record?.approvals) ? record.approvals : []
}

/** The manifest embedded in a revision's preview. */
export function manifestOf(revision) {
  const m = revision?.preview?.review
  return m && typeof m === 'object' ? m : null
}

/** What changed between the reviewed manifest and the current git state, in plain words. */
export function changeReasons(stored, current) {
  const reasons = []
  if (!stored) return ['the stored revision carries no review manifest']
  if (stored.head !== current.head) reasons.push(`head moved from ${short(stored.head)} to ${short(current.head)}`)
  if (stored.base !== current.base) reasons.push(`base moved from ${short(stored.base)} to ${short(current.base)} (rebased)`)
  const sp = stored.patch?.sha256
  const cp = current.patch?.sha256
  if (sp !== cp) reasons.push(`patch changed (sha256 ${short(sp)} → ${short(cp)})`)
  const si = stored.identity ?? {}
  const ci = current.identity ?? {}
  for (const k of new Set([...Object.keys(si), ...Object.keys(ci)])) {
    if (JSON.stringify(si[k]) !== JSON.stringify(ci[k])) reasons.push(`repository identity changed (${k})`)
  }
  if (reasons.length === 0 && stored.digest !== current.digest) reasons.push('the review manifest changed')
  return reasons
}

function fromTo(from, to) {
  return { from, to }
}

/**
 * Exactly what changed from the manifest `prev` to `next`, by aspect; an aspect that did not
 * change is absent:
 * `{ head?, base?, patch? : { from, to }, identity?: { <field>: { from, to } },
 *    paths?: { added, removed }, checks?: { added, removed, changed } }`
 * (`checks.added`/`removed`: `{ name, exitCode }`; `changed`: `{ name, from, to }` with
 * `{ exitCode, summary? }`).
 */
export function changesBetween(prev, next) {
  const out = {}
  if (prev.head !== next.head) out.head = fromTo(prev.head, next.head)
  if (prev.base !== next.base) out.base = fromTo(prev.base, next.base)
  if (prev.patch?.sha256 !== next.patch?.sha256) out.patch = fromTo(prev.patch?.sha256, next.patch?.sha256)
  const pi = prev.identity ?? {}
  const ni = next.identity ?? {}
  for (const k of new Set([...Object.keys(pi), ...Object.keys(ni)])) {
    if (JSON.stringify(pi[k]) !== JSON.stringify(ni[k])) (out.identity ??= {})[k] = fromTo(pi[k], ni[k])
  }
  const pp = new Set(prev.changedPaths ?? [])
  const np = new Set(next.changedPaths ?? [])
  const added = [...np].filter((p) => !pp.has(p))
  const removed = [...pp].filter((p) => !np.has(p))
  if (added.length || removed.length) out.paths = { added, removed }
  const pc = new Map((prev.checks ?? []).map((c) => [c.name, c]))
  const nc = new Map((next.checks ?? []).map((c) => [c.name, c]))
  const brief = (c) => (c.summary === undefined ? { exitCode: c.exitCode } : { exitCode: c.exitCode, summary: c.summary })
  const checks = { added: [], removed: [], changed: [] }
  for (const [name, c] of nc) {
    const was = pc.get(name)
    if (!was) checks.added.push({ name, exitCode: c.exitCode })
    else if (was.exitCode !== c.exitCode || was.summary !== c.summary) checks.changed.push({ name, from: brief(was), to: brief(c) })
  }
  for (const [name, c] of pc) if (!nc.has(name)) checks.removed.push({ name, exitCode: c.exitCode })
  if (checks.added.length || checks.removed.length || checks.changed.length) out.checks = checks
  return out
}

/**
 * Derives the review state for the current git state:
 * `{ state, reason, upToDate, record, revision, stored, current, outcome, gs, ids }`.
 * `state` is `none` when nothing was reviewed yet. The stored checks and diagnostics are
 * carried into the re-derived manifest, so only a change of patch, base, head or identity
 * (or a newer revision) moves the state.
 */
export async function deriveStatus(store, gs, baseIds) {
  if (!store) {
    return { state: 'none', reason: 'no review yet for this head and base', upToDate: false, record: null, gs, ids: { ...baseIds, generation: 1 } }
  }
  const { record, ids } = await findRecord(store.service, baseIds)
  if (!record) return { state: 'none', reason: 'no review yet for this head and base', upToDate: false, record: null, gs, ids }
  const revision = latestRevision(record)
  const stored = manifestOf(revision)
  const { assertCodingPatchAccepted } = await requireApi('assertCodingPatchAccepted')
  let current
  if (stored) {
    const { review } = await buildManifest(gs, ids, {
      checks: stored.checks ?? [],
      diagnostics: stored.diagnostics,
      reviewId: stored.reviewId,
      createdAt: stored.createdAt,
      patchUri: stored.patch?.sha256 === gs.patchSha ? stored.patch?.uri : undefined,
    })
    current = review
  }
  const upToDate = Boolean(stored && current && stored.digest === current.digest)
  let outcome = null
  if (current) outcome = await assertCodingPatchAccepted({ review: current, artifact: record })
  let state = outcome?.state ?? 'superseded'
  const why = outcome?.rule ?? (state === 'accepted' || state === 'rejected' ? { accepted: 'approved', rejected: 'rejected' }[state] : undefined)
  let reason = why === undefined ? outcome?.reason : (REASON_WORDS[why] ?? outcome?.reason)
  if (!upToDate) {
    // The git state moved since the last `review`: whatever the record says, it is about an
    // older patch.
    state = 'superseded'
    reason = changeReasons(stored, current ?? {}).join('; ')
  }
  return { state, reason, upToDate, record, revision, stored, current, outcome, gs, ids }
}

/** The manifest cap: the preview cap (a revision's preview holds the whole manifest). */
const MANIFEST_BYTES = SERVICE_LIMITS.previewBytes

/** The reasons an artifact write is refused because the review does not fit. */
const DOES_NOT_FIT = new Set(['record_too_large', 'preview_too_large'])

/**
 * The error for a patch whose review does not fit: what the caps are and what to do.
 * The manifest (`maxManifestBytes`, 64 KiB by default) is stored whole in one artifact
 * revision, whose preview and record caps prism-review already runs at their hard maximum.
 */
export function tooLargeError(gs, cause) {
  const kib = (n) => (n % 1024 === 0 ? `${n / 1024} KiB` : `${n} bytes`)
  const detail = cause && typeof cause.message === 'string' ? ` (${cause.message.replace(/\s+/g, ' ').trim()})` : ''
  return new CliError(
    `the patch of ${gs.headName} over ${gs.baseRef} is too large to review: its ${gs.changedPaths.length} changed files make a review manifest over the caps${detail}. ` +
      `A review revision stores its whole manifest: at most ${kib(MANIFEST_BYTES)} of manifest (maxManifestBytes) in an artifact record of at most ${kib(SERVICE_LIMITS.recordBytes)} (previewBytes and recordBytes, which prism-review already runs at their hard maximum), so no option raises it. ` +
      `Review the change in smaller parts: split it into smaller branches, each reviewed on its own (or pass --head <commit> to review an earlier commit of the branch first). Nothing was stored.`,
  )
}

function isLimit(err) {
  return err && err.code === 'ERR_PRISM_REVIEW_LIMIT'
}

/**
 * Checks, before anything is run or stored, that a review of `gs` (with `checks`) fits:
 * throws {@link tooLargeError} when its manifest is over the caps.
 */
export async function assertReviewFits(gs, ids, checks = []) {
  try {
    await buildManifest(gs, { ...ids, generation: 1 }, { checks })
  } catch (err) {
    if (isLimit(err)) throw tooLargeError(gs, err)
    throw err
  }
}

/**
 * Which checks a new revision records: the ones just run (`checks`), none (`clear`), or,
 * when no `--check` was given, the previous revision's (kept, so a failing check cannot
 * disappear by reviewing again without it).
 * Returns `{ checks, source }` with `source` one of `ran`, `cleared`, `kept`, `none`.
 */
export function chooseChecks(prev, { checks, clear }) {
  if (checks && checks.length > 0) return { checks, source: 'ran' }
  if (clear) return { checks: [], source: 'cleared' }
  const kept = Array.isArray(prev?.checks) ? prev.checks : []
  return kept.length > 0 ? { checks: kept, source: 'kept' } : { checks: [], source: 'none' }
}

/**
 * Runs `review`: attaches or revises the artifact, stores the patch body, derives the state.
 * `checks`: the checks just run (empty when none were given); `clear`: `--no-checks`.
 * When the store refuses the review, the patch body written by this call is removed again.
 */
export async function submitReview(store, gs, baseIds, { checks = [], clear = false, diagnostics } = {}) {
  if (gs.patch.length === 0) {
    throw new CliError(`nothing to review: ${gs.headName} (${short(gs.headSha)}) has no changes over ${gs.baseRef}`)
  }
  const found = await findRecord(store.service, baseIds)
  let ids = found.ids
  const prevRevision = found.record ? latestRevision(found.record) : null
  const prev = manifestOf(prevRevision)
  const chosen = chooseChecks(prev, { checks, clear })
  const uri = `.prism/patches/${gs.patchSha}.patch`
  const manifestFor = async (at) => {
    try {
      return await buildManifest(gs, at, { checks: chosen.checks, diagnostics, patchUri: uri })
    } catch (err) {
      if (isLimit(err)) throw tooLargeError(gs, err)
      throw err
    }
  }
  let { review, artifactInput } = await manifestFor(ids)
  if (prev && prev.digest === review.digest) {
    storePatch(gs.root, gs.patchSha, gs.patch)
    const status = await deriveStatus(store, gs, baseIds)
    return { action: 'unchanged', review, status, patchUri: uri, checks: chosen }
  }
  const body = storePatch(gs.root, gs.patchSha, gs.patch)
  let action
  try {
    if (!found.record) {
      await store.service.attach({ ...artifactInput, ownership: LOCAL_OWNERSHIP })
      action = 'attached'
    } else {
      const input = { ownership: LOCAL_OWNERSHIP, threadId: ids.threadId, artifactId: ids.artifactId }
      for (const k of ['uri', 'hash', 'mime', 'preview', 'size', 'title']) {
        if (artifactInput[k] !== undefined) input[k] = artifactInput[k]
      }
      try {
        await store.service.revise(input)
        action = 'revised'
      } catch (err) {
        if (!isFull(err) || ids.generation >= MAX_GENERATIONS) throw err
        // This artifact is full: the review continues in the next one, pending again.
        ids = generationIds(baseIds, ids.generation + 1)
        ;({ review, artifactInput } = await manifestFor(ids))
        await store.service.attach({ ...artifactInput, ownership: LOCAL_OWNERSHIP })
        action = 'rolled over'
      }
    }
  } catch (err) {
    body.discard()
    if (err && err.code === 'ERR_PRISM_ARTIFACT' && DOES_NOT_FIT.has(err.reason)) throw tooLargeError(gs, err)
    throw err
  }
  const previous = prev ? { artifactId: found.ids.artifactId, revision: prevRevision.version, digest: prev.digest } : undefined
  const changes = prev ? changesBetween(prev, review) : undefined
  const status = await deriveStatus(store, gs, baseIds)
  return { action, review, status, patchUri: uri, previous, changes, checks: chosen }
}

/** Records a decision on the current revision; refuses when the review is out of date. */
export async function decide(store, gs, baseIds, decision, { note, reviewer }) {
  const before = await deriveStatus(store, gs, baseIds)
  const ids = before.ids
  if (!before.record) throw new CliError(`no review for ${gs.headName} over ${gs.baseRef}: run \`prism-review review\` first`)
  if (!before.upToDate) {
    throw new CliError(`the review is out of date (${before.reason}): run \`prism-review review\` first`)
  }
  const input = {
    ownership: LOCAL_OWNERSHIP,
    threadId: ids.threadId,
    artifactId: ids.artifactId,
    version: before.revision.version,
    reviewer,
  }
  if (note !== undefined) input.note = note
  const record = decision === 'approve' ? await store.service.approve(input) : await store.service.reject(input)
  const after = await deriveStatus(store, gs, baseIds)
  return { decision, record, status: after, reviewer, note }
}

/** The review's history: revisions and decisions, oldest first. */
export function history(record) {
  const events = []
  for (const rev of revisionsOf(record)) {
    const m = manifestOf(rev)
    events.push({
      kind: 'revision',
      version: rev.version,
      at: rev.createdAt ?? rev.attachedAt,
      hash: rev.hash,
      uri: rev.uri,
      head: m?.head,
      base: m?.base,
      digest: m?.digest,
      checks: m?.checks ?? [],
    })
  }
  for (const a of approvalsOf(record)) {
    events.push({ kind: 'decision', version: a.version, at: a.decidedAt ?? a.at ?? a.createdAt, state: a.state, reviewer: a.reviewer, note: a.note })
  }
  const t = (e) => (typeof e.at === 'string' ? Date.parse(e.at) || 0 : 0)
  events.sort((a, b) => t(a) - t(b) || a.version - b.version || (a.kind === 'revision' ? -1 : 1))
  return events
}
