//! The artifact service operations over any [`CheckpointStore`].
//!
//! Every mutation is one read-modify-write: load the checkpoint, validate and apply the
//! change in memory, then save with `expectedVersion` = the loaded checkpoint version. A
//! lost race is an `ArtifactError` `conflict` (retryable); any failure before the save
//! persists nothing. Requests are validated completely before the first store call, and
//! the abort flag is checked before and between store calls.
//!
//! Redaction: the request (every member but `ownership`, which must hold no secret) is
//! redacted before it is validated, so everything persisted derives from redacted data;
//! results and audit events are redacted again on the way out.

use super::evidence::binding_digest;
use super::input::{self, MAX_CURSOR_BYTES};
use super::limits::ArtifactLimits;
use super::link;
use super::model::{Approval, Decision, Record, ReviewState, Revision};
use super::redact::SecretRedactor;
use super::{err, invalid, record_key, time, CATEGORY, NAMESPACE};
use crate::error::{ArtifactReason as R, ErrorKind, PrismError, Result};
use crate::json::Fields;
use crate::store::{Checkpoint, CheckpointStore, ListCheckpoints, Ownership, SaveCheckpoint};
use base64::Engine;
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Message of the error an aborted operation ends with; the binding layer replaces it
/// with the signal's reason.
pub const ABORTED: &str = "the operation was aborted";

/// Set when the caller's `AbortSignal` fires; checked before and between store calls.
#[derive(Debug, Clone, Default)]
pub struct AbortFlag(Arc<AtomicBool>);

impl AbortFlag {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn abort(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    pub fn is_aborted(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
    pub fn check(&self) -> Result<()> {
        if self.is_aborted() {
            Err(PrismError::internal(ABORTED))
        } else {
            Ok(())
        }
    }
}

/// Resolved service options.
#[derive(Clone)]
pub struct ServiceConfig {
    pub link_secret: Vec<u8>,
    pub limits: ArtifactLimits,
}

impl std::fmt::Debug for ServiceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceConfig")
            .field("link_secret", &"<hidden>")
            .field("limits", &self.limits)
            .finish()
    }
}

impl ServiceConfig {
    /// From `{ linkSecretBase64, limits? }` (what the binding layer sends).
    pub fn parse(value: &Value) -> Result<Self> {
        let f = Fields::new(value, "options", PrismError::type_error)?;
        input::only(&f, &["linkSecretBase64", "limits"])
            .map_err(|e| PrismError::type_error(e.message))?;
        let secret = base64::engine::general_purpose::STANDARD
            .decode(f.str("linkSecretBase64")?)
            .map_err(|_| PrismError::type_error("options.linkSecret is not valid"))?;
        link::check_secret(&secret)?;
        Ok(Self {
            link_secret: secret,
            limits: ArtifactLimits::resolve(f.get("limits"))?,
        })
    }
}

/// A result and, for attach/revise/approve/reject, the audit event (`onDecision`).
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub result: Value,
    pub event: Option<Value>,
}

/// The service.
pub struct ArtifactService {
    store: Arc<dyn CheckpointStore>,
    redactor: Arc<SecretRedactor>,
    config: ServiceConfig,
}

/// Identity-derived context of one request.
struct Ctx {
    owner: Ownership,
    actor: Option<String>,
    now: i64,
}

const COMMON: [&str; 3] = ["ownership", "identity", "threadId"];

fn fields<'a>(v: &'a Value, extra: &[&str]) -> Result<Fields<'a>> {
    let allowed: Vec<&str> = COMMON.iter().chain(extra).copied().collect();
    input::request(v, &allowed)
}

fn new_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut buf = [0u8; 12];
    if getrandom::fill(&mut buf).is_err() {
        // No OS randomness: a process-unique digest of time, pid and a counter.
        let seed = format!(
            "{}:{}:{}",
            time::now_ms(),
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let hex = crate::json::sha256_hex(seed.as_bytes());
        return format!("art_{}", hex.get(..24).unwrap_or(&hex));
    }
    let mut s = String::from("art_");
    for b in buf {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn map_save_error(e: PrismError) -> PrismError {
    if e.kind == ErrorKind::CheckpointConflict {
        err(
            R::Conflict,
            "the artifact changed concurrently; reload and retry",
        )
    } else {
        e
    }
}

impl ArtifactService {
    pub fn new(
        store: Arc<dyn CheckpointStore>,
        redactor: Arc<SecretRedactor>,
        config: ServiceConfig,
    ) -> Self {
        Self {
            store,
            redactor,
            config,
        }
    }

    pub fn limits(&self) -> &ArtifactLimits {
        &self.config.limits
    }

    /// Run operation `op` on the JSON request `input`; results and events are redacted.
    pub async fn call(&self, op: &str, input: Value, abort: &AbortFlag) -> Result<Outcome> {
        abort.check()?;
        let input = self.redact_request(input);
        let out = match op {
            "attach" => self.attach(&input, abort).await,
            "list" => self.list(&input, abort).await,
            "get" => self.get(&input, abort).await,
            "revise" => self.revise(&input, abort).await,
            "compare" => self.compare(&input, abort).await,
            "approve" => self.decide(&input, Decision::Approved, abort).await,
            "reject" => self.decide(&input, Decision::Rejected, abort).await,
            "lastValidated" => self.last_validated(&input, abort).await,
            "deliveryLink" => self.delivery_link(&input, abort).await,
            other => Err(PrismError::type_error(format!(
                "unknown artifact operation {other:?}"
            ))),
        }
        .map_err(|mut e| {
            // Messages may quote a field name of the request: never a registered secret.
            e.message = self.redactor.redact_str(&e.message).into_owned();
            e
        })?;
        Ok(Outcome {
            result: self.redactor.redact_value(out.result),
            event: out.event.map(|e| self.redactor.redact_value(e)),
        })
    }

    fn redact_request(&self, input: Value) -> Value {
        match input {
            Value::Object(obj) if !self.redactor.is_empty() => {
                let mut out = Map::with_capacity(obj.len());
                for (k, v) in obj {
                    let v = if k == "ownership" {
                        v
                    } else {
                        self.redactor.redact_value(v)
                    };
                    out.insert(k, v);
                }
                Value::Object(out)
            }
            other => other,
        }
    }

    fn ctx(&self, f: &Fields<'_>) -> Result<Ctx> {
        let now = time::now_ms();
        let owner = input::ownership(f.get("ownership"), &self.redactor)?;
        let actor = input::identity(f.get("identity"), &owner, now)?;
        Ok(Ctx { owner, actor, now })
    }

    fn event(
        &self,
        kind: &str,
        rec: &Record,
        version: u64,
        ctx: &Ctx,
        actor: Option<&str>,
        state: Option<Decision>,
    ) -> Value {
        let mut e = json!({
            "type": kind,
            "artifactId": rec.id,
            "threadId": rec.thread_id,
            "version": version,
            "ownership": ctx.owner,
            "at": time::format_iso(ctx.now),
        });
        if let Some(a) = actor {
            e["actor"] = Value::String(a.to_string());
        }
        if let Some(s) = state {
            e["state"] = serde_json::to_value(s).unwrap_or(Value::Null);
        }
        e
    }

    fn check_record_size(&self, rec: &Record) -> Result<Value> {
        let v = rec.to_value();
        let n = v.to_string().len();
        if n as u64 > self.config.limits.record_bytes {
            return Err(input::too_large(
                R::RecordTooLarge,
                "the artifact record",
                n,
                self.config.limits.record_bytes,
            ));
        }
        Ok(v)
    }

    async fn load(
        &self,
        key: &str,
        owner: &Ownership,
        abort: &AbortFlag,
    ) -> Result<Option<(Checkpoint, Record)>> {
        abort.check()?;
        let cp = match self.store.load(NAMESPACE, key, owner).await {
            Ok(Some(cp)) => cp,
            Ok(None) => return Ok(None),
            Err(e) if e.kind == ErrorKind::CheckpointConflict => return Ok(None),
            Err(e) => return Err(e),
        };
        abort.check()?;
        if cp.ownership != *owner {
            return Ok(None);
        }
        let rec: Record = serde_json::from_value(cp.value.clone()).map_err(|e| {
            PrismError::internal(format!("stored artifact record {key} is malformed: {e}"))
        })?;
        if rec.ownership != *owner || record_key(&rec.thread_id, &rec.id) != key {
            return Ok(None);
        }
        Ok(Some((cp, rec)))
    }

    async fn load_required(
        &self,
        f: &Fields<'_>,
        ctx: &Ctx,
        abort: &AbortFlag,
    ) -> Result<(Checkpoint, Record)> {
        let thread = input::id(f, "threadId", &self.redactor)?;
        let artifact = input::id(f, "artifactId", &self.redactor)?;
        let key = record_key(&thread, &artifact);
        self.load(&key, &ctx.owner, abort).await?.ok_or_else(|| {
            err(
                R::NotFound,
                format!("artifact {artifact} not found in thread {thread}"),
            )
        })
    }

    async fn save(
        &self,
        rec: &Record,
        value: Value,
        owner: &Ownership,
        expected: u64,
        abort: &AbortFlag,
    ) -> Result<Checkpoint> {
        abort.check()?;
        self.store
            .save(SaveCheckpoint {
                namespace: NAMESPACE.into(),
                key: record_key(&rec.thread_id, &rec.id),
                ownership: owner.clone(),
                category: Some(CATEGORY.into()),
                value,
                expected_version: Some(expected),
            })
            .await
            .map_err(map_save_error)
    }

    async fn count_thread(
        &self,
        thread: &str,
        owner: &Ownership,
        cap: u64,
        abort: &AbortFlag,
    ) -> Result<u64> {
        let mut count: u64 = 0;
        let mut cursor = None;
        loop {
            abort.check()?;
            let page = self
                .store
                .list(ListCheckpoints {
                    namespace: NAMESPACE.into(),
                    prefix: Some(format!("{thread}:")),
                    ownership: Some(owner.clone()),
                    cursor: cursor.take(),
                    limit: Some(u32::try_from(cap.min(200)).unwrap_or(200)),
                })
                .await?;
            count = count.saturating_add(page.items.len() as u64);
            match page.next_cursor {
                Some(c) if count < cap && !page.items.is_empty() => cursor = Some(c),
                _ => return Ok(count),
            }
        }
    }

    fn revision_from(
        &self,
        f: &Fields<'_>,
        version: u64,
        mime: String,
        ctx: &Ctx,
    ) -> Result<Revision> {
        let l = &self.config.limits;
        Ok(Revision {
            version,
            uri: input::uri(f, "uri", l.uri_bytes)?,
            mime,
            hash: input::bounded(f, "hash", l.hash_bytes, R::HashTooLarge, true)?
                .unwrap_or_default(),
            size: input::size(f)?,
            title: input::bounded(f, "title", l.title_bytes, R::TitleTooLarge, false)?,
            note: input::bounded(f, "note", l.note_bytes, R::NoteTooLarge, false)?,
            preview: input::preview(f, l)?,
            citations: input::citations(f, l)?,
            producer: input::producer(f)?,
            created_by: ctx.actor.clone(),
            created_at: time::format_iso(ctx.now),
        })
    }

    async fn attach(&self, v: &Value, abort: &AbortFlag) -> Result<Outcome> {
        const REV: [&str; 9] = [
            "uri",
            "mime",
            "hash",
            "size",
            "title",
            "note",
            "preview",
            "citations",
            "producer",
        ];
        let f = fields(v, &[&REV[..], &["id", "kind"]].concat())?;
        let ctx = self.ctx(&f)?;
        let l = &self.config.limits;
        let thread = input::id(&f, "threadId", &self.redactor)?;
        let explicit = f.get("id").is_some();
        let id = if explicit {
            input::id(&f, "id", &self.redactor)?
        } else {
            new_id()
        };
        let kind = input::bounded(&f, "kind", l.title_bytes, R::TitleTooLarge, false)?;
        let mime =
            input::bounded(&f, "mime", l.mime_bytes, R::MimeTooLarge, true)?.unwrap_or_default();
        let revision = self.revision_from(&f, 1, mime, &ctx)?;
        let at = time::format_iso(ctx.now);
        let rec = Record {
            id: id.clone(),
            thread_id: thread.clone(),
            ownership: ctx.owner.clone(),
            kind,
            title: revision.title.clone(),
            state: ReviewState::Pending,
            latest_version: 1,
            last_validated_version: None,
            revisions: vec![revision],
            approvals: Vec::new(),
            created_at: at.clone(),
            updated_at: at,
        };
        let value = self.check_record_size(&rec)?;
        let key = record_key(&thread, &id);
        if explicit {
            if let Some((_, existing)) = self.load(&key, &ctx.owner, abort).await? {
                return Ok(Outcome {
                    result: existing.to_value(),
                    event: None,
                });
            }
        }
        let count = self
            .count_thread(&thread, &ctx.owner, l.artifacts_per_thread, abort)
            .await?;
        if count >= l.artifacts_per_thread {
            return Err(err(
                R::TooManyArtifacts,
                format!(
                    "thread {thread} already holds {count} artifacts; the cap is {}",
                    l.artifacts_per_thread
                ),
            ));
        }
        match self.save(&rec, value.clone(), &ctx.owner, 0, abort).await {
            Ok(_) => {
                // The count above is a snapshot: attaches racing on one thread can all pass
                // it. Recount with ours included; over the cap, withdraw ours (only while it
                // is still at version 1, untouched) and refuse, so a thread never keeps more
                // artifacts than its cap. Racers may both withdraw: a retryable refusal, never
                // an overfull thread. The record is committed, so the abort signal no longer
                // applies here.
                let settled = AbortFlag::new();
                let cap = l.artifacts_per_thread;
                let after = self
                    .count_thread(&thread, &ctx.owner, cap.saturating_add(1), &settled)
                    .await
                    .unwrap_or(0);
                if after > cap
                    && self
                        .store
                        .delete(NAMESPACE, &key, &ctx.owner, Some(1))
                        .await
                        .unwrap_or(false)
                {
                    return Err(err(
                        R::TooManyArtifacts,
                        format!("thread {thread} reached its cap of {cap} artifacts"),
                    ));
                }
                let event = self.event(
                    "artifact_attached",
                    &rec,
                    1,
                    &ctx,
                    ctx.actor.as_deref(),
                    None,
                );
                Ok(Outcome {
                    result: value,
                    event: Some(event),
                })
            }
            Err(e) if explicit && e.reason() == Some("conflict") => {
                // Lost a create race for the same id: the winner's record is the answer.
                match self.load(&key, &ctx.owner, abort).await? {
                    Some((_, existing)) => Ok(Outcome {
                        result: existing.to_value(),
                        event: None,
                    }),
                    None => Err(err(
                        R::InvalidId,
                        format!("artifact id {id} is not available in thread {thread}"),
                    )),
                }
            }
            Err(e) => Err(e),
        }
    }

    async fn list(&self, v: &Value, abort: &AbortFlag) -> Result<Outcome> {
        let f = fields(v, &["cursor", "limit"])?;
        let ctx = self.ctx(&f)?;
        let thread = input::id(&f, "threadId", &self.redactor)?;
        let page_cap = self.config.limits.list_page_size;
        let limit = match f.opt_u64("limit")? {
            Some(0) => return Err(f.fail("limit", "must be a positive integer")),
            Some(n) => n.min(page_cap),
            None => page_cap,
        };
        let cursor = input::bounded(
            &f,
            "cursor",
            MAX_CURSOR_BYTES as u64,
            R::InvalidInput,
            false,
        )?;
        abort.check()?;
        let page = self
            .store
            .list(ListCheckpoints {
                namespace: NAMESPACE.into(),
                prefix: Some(format!("{thread}:")),
                ownership: Some(ctx.owner.clone()),
                cursor,
                limit: Some(u32::try_from(limit).unwrap_or(200)),
            })
            .await?;
        abort.check()?;
        let mut items = Vec::with_capacity(page.items.len());
        for cp in page.items {
            if cp.ownership != ctx.owner {
                continue;
            }
            let rec: Record = serde_json::from_value(cp.value).map_err(|e| {
                PrismError::internal(format!(
                    "stored artifact record {} is malformed: {e}",
                    cp.key
                ))
            })?;
            if rec.ownership == ctx.owner && rec.thread_id == thread {
                items.push(rec.to_value());
            }
        }
        let mut result = json!({ "items": items });
        if let Some(c) = page.next_cursor {
            result["nextCursor"] = Value::String(c);
        }
        Ok(Outcome {
            result,
            event: None,
        })
    }

    async fn get(&self, v: &Value, abort: &AbortFlag) -> Result<Outcome> {
        let f = fields(v, &["artifactId"])?;
        let ctx = self.ctx(&f)?;
        let (_, rec) = self.load_required(&f, &ctx, abort).await?;
        Ok(Outcome {
            result: rec.to_value(),
            event: None,
        })
    }

    async fn revise(&self, v: &Value, abort: &AbortFlag) -> Result<Outcome> {
        let f = fields(
            v,
            &[
                "artifactId",
                "uri",
                "mime",
                "hash",
                "size",
                "title",
                "note",
                "preview",
                "citations",
                "producer",
            ],
        )?;
        let ctx = self.ctx(&f)?;
        let l = &self.config.limits;
        input::id(&f, "threadId", &self.redactor)?;
        input::id(&f, "artifactId", &self.redactor)?;
        let mime = input::bounded(&f, "mime", l.mime_bytes, R::MimeTooLarge, false)?;
        // Validate the whole revision before any store call (the MIME is filled in below).
        let mut revision = self.revision_from(&f, 0, String::new(), &ctx)?;
        let (cp, mut rec) = self.load_required(&f, &ctx, abort).await?;
        if rec.revisions.len() as u64 >= l.revisions_per_artifact {
            return Err(err(
                R::TooManyRevisions,
                format!(
                    "artifact {} already has {} revisions; the cap is {}",
                    rec.id,
                    rec.revisions.len(),
                    l.revisions_per_artifact
                ),
            ));
        }
        let previous_mime = rec.latest().map(|r| r.mime.clone()).unwrap_or_default();
        revision.mime = mime.unwrap_or(previous_mime);
        revision.version = rec
            .latest_version
            .checked_add(1)
            .ok_or_else(|| PrismError::internal("revision counter overflow"))?;
        let version = revision.version;
        if revision.title.is_some() {
            rec.title = revision.title.clone();
        }
        rec.revisions.push(revision);
        rec.latest_version = version;
        rec.updated_at = time::format_iso(ctx.now);
        rec.refresh_state();
        let value = self.check_record_size(&rec)?;
        self.save(&rec, value.clone(), &ctx.owner, cp.version, abort)
            .await?;
        let event = self.event(
            "artifact_revised",
            &rec,
            version,
            &ctx,
            ctx.actor.as_deref(),
            None,
        );
        Ok(Outcome {
            result: value,
            event: Some(event),
        })
    }

    async fn compare(&self, v: &Value, abort: &AbortFlag) -> Result<Outcome> {
        let f = fields(v, &["artifactId", "from", "to"])?;
        let ctx = self.ctx(&f)?;
        let from = input::version(&f, "from", true)?.unwrap_or_default();
        let to = input::version(&f, "to", true)?.unwrap_or_default();
        if from == to {
            return Err(invalid(
                "compare takes two distinct revisions (from != to)".into(),
            ));
        }
        let (_, rec) = self.load_required(&f, &ctx, abort).await?;
        let missing = |n: u64| err(R::NotFound, format!("revision {n} not found"));
        let a = rec.revision(from).ok_or_else(|| missing(from))?;
        let b = rec.revision(to).ok_or_else(|| missing(to))?;
        let empty = Vec::new();
        let result = json!({
            "artifactId": rec.id,
            "from": from,
            "to": to,
            "changed": {
                "hash": a.hash != b.hash,
                "mime": a.mime != b.mime,
                "uri": a.uri != b.uri,
                "citations": a.citations.as_ref().unwrap_or(&empty) != b.citations.as_ref().unwrap_or(&empty),
            }
        });
        Ok(Outcome {
            result,
            event: None,
        })
    }

    async fn decide(&self, v: &Value, state: Decision, abort: &AbortFlag) -> Result<Outcome> {
        let f = fields(v, &["artifactId", "version", "reviewer", "note"])?;
        let ctx = self.ctx(&f)?;
        let version = input::version(&f, "version", true)?.unwrap_or_default();
        let note = input::bounded(
            &f,
            "note",
            self.config.limits.note_bytes,
            R::NoteTooLarge,
            false,
        )?;
        let reviewer = input::reviewer(&f)?
            .or_else(|| ctx.actor.clone())
            .ok_or_else(|| {
                invalid("a decision needs a verified identity or an explicit reviewer".into())
            })?;
        let (cp, mut rec) = self.load_required(&f, &ctx, abort).await?;
        let rev = rec
            .revision(version)
            .ok_or_else(|| err(R::NotFound, format!("revision {version} not found")))?;
        let evidence_digest = match state {
            Decision::Approved => Some(binding_digest(rev.citations.as_deref().unwrap_or(&[]))),
            Decision::Rejected => None,
        };
        rec.approvals.retain(|a| a.version != version);
        rec.approvals.push(Approval {
            version,
            state,
            reviewer: reviewer.clone(),
            note,
            evidence_digest,
            decided_at: time::format_iso(ctx.now),
        });
        rec.approvals.sort_by_key(|a| a.version);
        if state == Decision::Approved {
            rec.last_validated_version = Some(
                rec.last_validated_version
                    .map_or(version, |v| v.max(version)),
            );
        }
        rec.updated_at = time::format_iso(ctx.now);
        rec.refresh_state();
        let value = self.check_record_size(&rec)?;
        self.save(&rec, value.clone(), &ctx.owner, cp.version, abort)
            .await?;
        let kind = match state {
            Decision::Approved => "artifact_approved",
            Decision::Rejected => "artifact_rejected",
        };
        let event = self.event(kind, &rec, version, &ctx, Some(&reviewer), Some(state));
        Ok(Outcome {
            result: value,
            event: Some(event),
        })
    }

    async fn last_validated(&self, v: &Value, abort: &AbortFlag) -> Result<Outcome> {
        let f = fields(v, &["artifactId"])?;
        let ctx = self.ctx(&f)?;
        let (_, rec) = self.load_required(&f, &ctx, abort).await?;
        let rev = rec
            .last_validated_version
            .and_then(|n| rec.revision(n))
            .ok_or_else(|| {
                err(
                    R::NotValidated,
                    format!("artifact {} has no approved revision", rec.id),
                )
            })?;
        Ok(Outcome {
            result: serde_json::to_value(rev).unwrap_or(Value::Null),
            event: None,
        })
    }

    async fn delivery_link(&self, v: &Value, abort: &AbortFlag) -> Result<Outcome> {
        let f = fields(v, &["artifactId", "version", "ttlSeconds"])?;
        let ctx = self.ctx(&f)?;
        let version = input::version(&f, "version", false)?;
        let max_ttl = self.config.limits.delivery_ttl_seconds;
        let ttl = match f.opt_u64("ttlSeconds")? {
            None => max_ttl,
            Some(t) if t >= 1 && t <= max_ttl => t,
            Some(_) => {
                return Err(f.fail(
                    "ttlSeconds",
                    &format!("must be an integer in 1..={max_ttl}"),
                ))
            }
        };
        let (_, rec) = self.load_required(&f, &ctx, abort).await?;
        let version = version
            .or(rec.last_validated_version)
            .unwrap_or(rec.latest_version);
        if rec.revision(version).is_none() {
            return Err(err(R::NotFound, format!("revision {version} not found")));
        }
        let token = link::issue(&rec.id, &rec.thread_id, version, &ctx.owner, ttl, ctx.now);
        let delivery = link::sign(&token, &self.config.link_secret, &self.config.limits)?;
        Ok(Outcome {
            result: serde_json::to_value(delivery).unwrap_or(Value::Null),
            event: None,
        })
    }
}

#[cfg(test)]
mod tests;
