//! The work draft operations over any [`CheckpointStore`].
//!
//! Every mutation is one read-modify-write: load the checkpoint, check the caller's
//! `expectedVersion` against it, validate and apply the change in memory, then save with
//! `expectedVersion` = that version (caller-assigned version + 1). A lost race is a
//! `WorkDraftError` `conflict` (retryable); any failure before the save persists
//! nothing. Requests are validated completely before the first store call where they
//! can be (edits are checked against the draft once it is loaded), and the abort flag
//! is checked before and between store calls.
//!
//! Redaction: the request (every member but `ownership`) is redacted before it is
//! validated, so the stored payload, and the digest over it, derive from redacted data;
//! results, events and error messages are redacted again on the way out.

use super::limits::DraftLimits;
use super::model::{Approval, Decision, Draft, Revision};
use super::recipients::RecipientSpec;
use super::{invalid, payload, record_key, werr, RecipientPolicy, CATEGORY, NAMESPACE};
use crate::artifacts::redact::SecretRedactor;
use crate::artifacts::{input as ainput, AbortFlag};
use crate::error::{ErrorKind, PrismError, Result, WorkDraftReason as R};
use crate::json::Fields;
use crate::store::{Checkpoint, CheckpointKey, CheckpointStore, Ownership, SaveCheckpoint};
use crate::util::time;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::sync::Arc;

mod ops;

/// The service's operations (its method names).
pub const OPERATIONS: [&str; 7] = [
    "create",
    "get",
    "list",
    "decide",
    "claimExecution",
    "markExecuted",
    "markFailed",
];

/// Longest provider, op, idempotency key, reviewer or worker ref, in bytes.
pub const MAX_NAME_BYTES: usize = 256;

/// Resolved service options.
#[derive(Debug, Clone, Copy, Default)]
pub struct DraftConfig {
    pub limits: DraftLimits,
    /// An edit leaves its new revision pending for a second decision.
    pub edits_require_reapproval: bool,
}

impl DraftConfig {
    /// From `{ limits?, editsRequireReapproval? }` (what the binding layer sends).
    pub fn parse(value: &Value) -> Result<Self> {
        let f = Fields::new(value, "options", PrismError::type_error)?;
        for k in f.names() {
            if !["limits", "editsRequireReapproval"].contains(&k) {
                return Err(PrismError::type_error(format!(
                    "options.{k} is not a known option"
                )));
            }
        }
        Ok(Self {
            limits: DraftLimits::resolve(f.get("limits"))?,
            edits_require_reapproval: f.opt_bool("editsRequireReapproval")?.unwrap_or(false),
        })
    }
}

/// A result and, for mutations, the audit event (`onDecision`).
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub result: Value,
    pub event: Option<Value>,
}

/// The service.
pub struct WorkDraftService {
    store: Arc<dyn CheckpointStore>,
    redactor: Arc<SecretRedactor>,
    policy: Option<Arc<dyn RecipientPolicy>>,
    config: DraftConfig,
    schemas: super::schema::Cache,
}

/// Identity-derived context of one request.
struct Ctx {
    owner: Ownership,
    actor: Option<String>,
    now: String,
}

/// A WorkDraftError for any artifact-input error (ownership, identity, ids share the
/// artifact service's rules); other errors pass.
fn as_draft_error(e: PrismError) -> PrismError {
    match e.kind {
        ErrorKind::Artifact(_) => werr(R::InvalidInput, e.message),
        _ => e,
    }
}

fn not_found(thread: &str, draft: &str) -> PrismError {
    werr(
        R::NotFound,
        format!("draft {draft} not found in thread {thread}"),
    )
}

fn stale(expected: u64, current: u64) -> PrismError {
    werr(
        R::Conflict,
        format!("the draft is at version {current}, not the expected {expected}; reload and retry"),
    )
}

fn map_save_error(e: PrismError) -> PrismError {
    if e.kind == ErrorKind::CheckpointConflict {
        werr(
            R::Conflict,
            "the draft changed concurrently; reload and retry",
        )
    } else {
        e
    }
}

/// A bounded single-line name (provider, op, idempotency key, refs).
fn name(f: &Fields<'_>, key: &str, required: bool) -> Result<Option<String>> {
    match f.opt_str(key)? {
        None if required => Err(f.fail(key, "is required (a string)")),
        None => Ok(None),
        Some(s) if s.trim().is_empty() || s.len() > MAX_NAME_BYTES || s.chars().any(char::is_control) => Err(
            f.fail(key, &format!("must be a non-empty string of at most {MAX_NAME_BYTES} bytes without control characters")),
        ),
        Some(s) => Ok(Some(s.to_string())),
    }
}

/// An optional free text of at most `cap` bytes.
fn text(f: &Fields<'_>, key: &str, cap: u64) -> Result<Option<String>> {
    match f.opt_str(key)? {
        Some(s) if s.len() as u64 > cap => Err(werr(
            R::InvalidInput,
            format!("{} is {} bytes; the cap is {cap}", f.path(key), s.len()),
        )),
        other => Ok(other.map(str::to_string)),
    }
}

/// A draft id, generated when absent: `wd_` + 24 hex (from the idempotency key when
/// one is given, so a retried create finds the same draft).
fn new_id(idempotency_key: Option<&str>) -> String {
    if let Some(k) = idempotency_key {
        return format!("wd_{}", &crate::json::sha256_hex(k.as_bytes())[..24]);
    }
    let mut buf = [0u8; 12];
    if getrandom::fill(&mut buf).is_err() {
        let seed = format!("{}:{}", time::now_ms(), std::process::id());
        return format!("wd_{}", &crate::json::sha256_hex(seed.as_bytes())[..24]);
    }
    let mut s = String::from("wd_");
    for b in buf {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

impl WorkDraftService {
    pub fn new(
        store: Arc<dyn CheckpointStore>,
        redactor: Arc<SecretRedactor>,
        policy: Option<Arc<dyn RecipientPolicy>>,
        config: DraftConfig,
    ) -> Self {
        Self {
            store,
            redactor,
            policy,
            config,
            schemas: super::schema::Cache::default(),
        }
    }

    pub fn limits(&self) -> &DraftLimits {
        &self.config.limits
    }

    /// Run operation `op` on the JSON request `input`; results and events are redacted.
    pub async fn call(&self, op: &str, input: Value, abort: &AbortFlag) -> Result<Outcome> {
        abort.check()?;
        let input = self.redactor.redact_request(input);
        let out = match op {
            "create" => self.create(&input, abort).await,
            "get" => self.get(&input, abort).await,
            "list" => self.list(&input, abort).await,
            "decide" => self.decide(&input, abort).await,
            "claimExecution" => self.claim(&input, abort).await,
            "markExecuted" => self.finish(&input, true, abort).await,
            "markFailed" => self.finish(&input, false, abort).await,
            other => Err(PrismError::type_error(format!(
                "unknown work draft operation {other:?}"
            ))),
        }
        .map_err(|e| self.redactor.redact_error(e))?;
        Ok(Outcome {
            result: self.redactor.redact_value(out.result),
            event: out.event.map(|e| self.redactor.redact_value(e)),
        })
    }

    fn fields<'a>(&self, v: &'a Value, allowed: &[&str]) -> Result<Fields<'a>> {
        let f = Fields::new(v, "input", invalid)?;
        ainput::only_in(&f, &ainput::REQUEST_COMMON, &[allowed])?;
        Ok(f)
    }

    fn ctx(&self, f: &Fields<'_>) -> Result<Ctx> {
        let now = time::now_ms();
        let owner =
            ainput::ownership(f.get("ownership"), &self.redactor).map_err(as_draft_error)?;
        let actor = ainput::identity(f.get("identity"), &owner, now).map_err(as_draft_error)?;
        Ok(Ctx {
            owner,
            actor,
            now: time::format_iso(now),
        })
    }

    fn id(&self, f: &Fields<'_>, key: &str) -> Result<String> {
        ainput::id(f, key, &self.redactor)
            .map(str::to_owned)
            .map_err(as_draft_error)
    }

    /// A required positive `expectedVersion`.
    fn expected_version(f: &Fields<'_>) -> Result<u64> {
        match f.opt_u64("expectedVersion")? {
            Some(v) if v > 0 => Ok(v),
            _ => Err(f.fail(
                "expectedVersion",
                "is required (a positive integer: the draft's version)",
            )),
        }
    }

    fn key(
        &self,
        thread: &str,
        draft: &str,
        owner: &Ownership,
        abort: &AbortFlag,
    ) -> CheckpointKey {
        CheckpointKey {
            signal: abort.signal(),
            ..CheckpointKey::new(NAMESPACE, &record_key(thread, draft), owner)
        }
    }

    /// The draft, or `None`: absent, another owner's (a host store's conflict on load
    /// included), or not the draft this key names.
    async fn load(
        &self,
        thread: &str,
        draft: &str,
        owner: &Ownership,
        abort: &AbortFlag,
    ) -> Result<Option<Draft>> {
        abort.check()?;
        let cp = match self
            .store
            .load(&self.key(thread, draft, owner, abort))
            .await
        {
            Ok(Some(cp)) => cp,
            Ok(None) => return Ok(None),
            Err(e) if e.kind == ErrorKind::CheckpointConflict => return Ok(None),
            Err(e) => return Err(e),
        };
        abort.check()?;
        Ok(self
            .draft_of(cp, owner)?
            .filter(|d| d.thread_id == thread && d.id == draft))
    }

    fn draft_of(&self, cp: Checkpoint, owner: &Ownership) -> Result<Option<Draft>> {
        if cp.owner != *owner {
            return Ok(None);
        }
        let key = cp.key;
        let d = Draft::from_stored(cp.value, cp.version)
            .map_err(|e| PrismError::internal(format!("stored draft {key} is malformed: {e}")))?;
        Ok((d.owner.is_unowned() || d.owner == *owner).then_some(d))
    }

    /// Load the draft the request names, at the caller's `expectedVersion` when given.
    async fn load_required(
        &self,
        f: &Fields<'_>,
        ctx: &Ctx,
        expected: Option<u64>,
        abort: &AbortFlag,
    ) -> Result<Draft> {
        let thread = self.id(f, "threadId")?;
        let draft = self.id(f, "draftId")?;
        let d = self
            .load(&thread, &draft, &ctx.owner, abort)
            .await?
            .ok_or_else(|| not_found(&thread, &draft))?;
        match expected {
            Some(v) if v != d.version => Err(stale(v, d.version)),
            _ => Ok(d),
        }
    }

    /// Load the draft the request names at `expected`, refusing a closed one; with its
    /// latest revision.
    async fn load_open(
        &self,
        f: &Fields<'_>,
        ctx: &Ctx,
        expected: u64,
        abort: &AbortFlag,
    ) -> Result<(Draft, Revision)> {
        let d = self.load_required(f, ctx, Some(expected), abort).await?;
        if d.status.is_closed() {
            return Err(Self::closed(&d));
        }
        let latest = d
            .latest()
            .cloned()
            .ok_or_else(|| PrismError::internal("a draft without revisions"))?;
        Ok((d, latest))
    }

    /// Compare-and-swap save of `d` over its loaded version; `d.version` becomes the new one.
    async fn save(&self, d: &mut Draft, owner: &Ownership, abort: &AbortFlag) -> Result<Value> {
        let expected = d.version;
        d.version = expected.saturating_add(1);
        let value = d.to_value();
        let n = value.to_string().len();
        if n as u64 > self.config.limits.record_bytes() {
            return Err(werr(
                R::PayloadTooLarge,
                format!(
                    "the draft record would be {n} bytes; the cap is {}",
                    self.config.limits.record_bytes()
                ),
            ));
        }
        abort.check()?;
        self.store
            .save(SaveCheckpoint {
                namespace: NAMESPACE.into(),
                key: record_key(&d.thread_id, &d.id),
                owner: owner.clone(),
                version: d.version,
                expected_version: Some(expected),
                fencing_token: None,
                value: value.clone(),
                category: Some(CATEGORY.into()),
                metadata: None,
                signal: abort.signal(),
                memo: None,
            })
            .await
            .map_err(map_save_error)?;
        Ok(value)
    }

    /// Fail closed unless the host policy (when given) allows every address.
    async fn check_policy(&self, addresses: &BTreeSet<String>) -> Result<()> {
        let Some(policy) = &self.policy else {
            return Ok(());
        };
        if addresses.is_empty() {
            return Ok(());
        }
        let list: Vec<String> = addresses.iter().cloned().collect();
        let answers = policy.allow(&list).await.map_err(|e| {
            werr(
                R::RecipientEscalation,
                format!(
                    "the recipient policy failed, so no recipient is allowed: {}",
                    e.message
                ),
            )
        })?;
        let refused = list.len() - answers.iter().take(list.len()).filter(|a| **a).count();
        if refused > 0 {
            return Err(werr(
                R::RecipientEscalation,
                format!("the recipient policy does not allow {refused} recipient(s)"),
            ));
        }
        Ok(())
    }

    /// An audit event: `{ type, draftId, threadId, version, revision, payloadDigest,
    /// status, actor?, timestamp, owner members }` (no payload).
    fn event(&self, kind: &str, d: &Draft, ctx: &Ctx, actor: Option<&str>) -> Value {
        let mut e = Map::new();
        e.insert("type".into(), json!(kind));
        e.insert("draftId".into(), json!(d.id));
        e.insert("threadId".into(), json!(d.thread_id));
        e.insert("provider".into(), json!(d.provider));
        e.insert("op".into(), json!(d.op));
        e.insert("version".into(), json!(d.version));
        e.insert("revision".into(), json!(d.latest_revision));
        if let Some(r) = d.latest() {
            e.insert("payloadDigest".into(), json!(r.payload_digest));
        }
        e.insert("status".into(), json!(d.status.as_str()));
        if let Some(a) = actor {
            e.insert("actor".into(), json!(a));
        }
        e.insert("timestamp".into(), json!(ctx.now));
        ctx.owner.spread_into(&mut e);
        Value::Object(e)
    }

    fn spec_of(&self, d: &Draft) -> Result<RecipientSpec> {
        let scopes = d
            .scopes
            .as_ref()
            .map(|s| serde_json::to_value(s).unwrap_or(Value::Null));
        let paths = d.recipients.as_ref().map(|p| json!(p));
        RecipientSpec::parse(
            paths.as_ref(),
            scopes.as_ref(),
            super::recipients::MAX_TEXT_BYTES as u64,
        )
        .map_err(|e| {
            PrismError::internal(format!(
                "stored draft {} has bad recipient declarations: {}",
                d.id, e.message
            ))
        })
    }

    fn revision(&self, number: u64, payload: Value, author: Option<String>, now: &str) -> Revision {
        Revision {
            revision: number,
            payload_digest: payload::digest(&payload),
            payload,
            author,
            created_at: now.to_string(),
        }
    }

    fn approval(
        &self,
        rev: &Revision,
        decision: Decision,
        reviewer: &str,
        reason: Option<String>,
        now: &str,
    ) -> Approval {
        Approval {
            revision: rev.revision,
            payload_digest: rev.payload_digest.clone(),
            decision,
            reviewer: reviewer.to_string(),
            decided_at: now.to_string(),
            reason,
            invalidated_at: None,
        }
    }

    fn closed(d: &Draft) -> PrismError {
        werr(
            R::AlreadyExecuted,
            format!(
                "draft {} is {}; it executes at most once",
                d.id,
                d.status.as_str()
            ),
        )
    }
}

#[cfg(test)]
mod tests;
