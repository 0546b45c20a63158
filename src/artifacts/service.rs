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
use super::{err, invalid};
use crate::error::{ArtifactReason as R, ErrorKind, PrismError, Result};
use crate::json::{Fields, Members};
use crate::store::{CheckpointStore, Ownership};
use crate::util::time;
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

mod context;
mod records;
pub use context::{AbortFlag, ServiceConfig, OPERATIONS};
use records::{Loaded, Use};

/// A result and, for attach/revise/approve/reject, the audit event (`onDecision`): what
/// [`ArtifactService::call`] answers (the tests' entry; the binding uses `call_json`).
#[cfg(test)]
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub result: Value,
    pub event: Option<Value>,
    /// `deliveryLink` with a body store wired: `{ ref, ttlMs, notAfter }` for `bodies.presign`.
    pub body: Option<Value>,
}

/// A result's JSON text, written after the opening `{"result":` of the answer
/// [`ArtifactService::call_json`] makes of it, so that the answer is this buffer grown by
/// its last members, not a copy of the text (issue 13).
struct ResultText(String);

impl ResultText {
    const OPEN: &'static str = "{\"result\":";

    /// Room for `text_bytes` of text and the answer's closing brace.
    fn with_capacity(text_bytes: usize) -> Self {
        let mut buf = String::with_capacity(Self::OPEN.len() + text_bytes + 1);
        buf.push_str(Self::OPEN);
        Self(buf)
    }

    fn of(text: &str) -> Self {
        let mut out = Self::with_capacity(text.len());
        out.0.push_str(text);
        out
    }

    /// `result` serialized straight into the buffer.
    fn serialized(result: &impl serde::Serialize) -> Result<Self> {
        let mut buf = Vec::with_capacity(Self::OPEN.len() + 256);
        buf.extend_from_slice(Self::OPEN.as_bytes());
        serde_json::to_writer(&mut buf, result).map_err(|e| PrismError::internal(e.to_string()))?;
        // serde_json writes UTF-8 only.
        String::from_utf8(buf)
            .map(Self)
            .map_err(|e| PrismError::internal(e.to_string()))
    }

    fn record(rec: &Record) -> Self {
        let mut out = Self::with_capacity(rec.text_capacity());
        rec.write_text(&mut out.0);
        out
    }

    /// The result's text.
    fn text(&self) -> &str {
        self.0.get(Self::OPEN.len()..).unwrap_or_default()
    }

    /// The answer: `{"result":<text>` and the given members, closed.
    fn answer(self, members: &[(&str, Option<String>)]) -> String {
        let mut out = self.0;
        for (name, text) in members {
            if let Some(text) = text {
                out.push_str(",\"");
                out.push_str(name);
                out.push_str("\":");
                out.push_str(text);
            }
        }
        out.push('}');
        out
    }
}

/// `ArtifactCompareResult`: which fields of revision `to` differ from revision `from`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Comparison<'a> {
    artifact_id: &'a str,
    from: u64,
    to: u64,
    changed: Changed,
}

#[derive(serde::Serialize)]
struct Changed {
    hash: bool,
    mime: bool,
    uri: bool,
    citations: bool,
}

/// What an operation answers, before the result and event are redacted.
struct Answer {
    /// The result's JSON text: every operation writes it (a record as its text, anything
    /// else serialized), none builds it as a `Value` first (issue 13).
    result: ResultText,
    event: Option<Value>,
    body: Option<Value>,
}

impl Answer {
    /// A result written straight to its JSON text.
    fn serialized(result: &impl serde::Serialize) -> Result<Self> {
        ResultText::serialized(result).map(Self::text)
    }

    fn text(result: ResultText) -> Self {
        Self {
            result,
            event: None,
            body: None,
        }
    }

    /// A saved record's text and the audit event of the change (none when nobody
    /// listens).
    fn recorded(text: ResultText, event: Option<Value>) -> Self {
        Self {
            event,
            ..Self::text(text)
        }
    }
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

/// Who an audit event names: the creating actor, or the deciding reviewer.
enum Who<'a> {
    Actor(Option<&'a str>),
    Reviewer(&'a str, Decision),
}

/// Revision members of attach and revise.
const REVISION: [&str; 9] = [
    "uri",
    "mime",
    "hash",
    "size",
    "title",
    "changeNote",
    "preview",
    "citations",
    "producerRunId",
];

fn fields<'a>(v: &'a Members, extra: &[&[&str]]) -> Result<Fields<'a>> {
    input::request_members(v, &input::REQUEST_COMMON, extra)
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

fn too_many(thread: &str, count: u64, cap: u64) -> PrismError {
    err(
        R::TooManyArtifacts,
        format!("thread {thread} already holds {count} artifacts; the cap is {cap}"),
    )
}

fn not_found(thread: &str, artifact: &str) -> PrismError {
    err(
        R::NotFound,
        format!("artifact {artifact} not found in thread {thread}"),
    )
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
    #[cfg(test)]
    pub async fn call(&self, op: &str, input: Value, abort: &AbortFlag) -> Result<Outcome> {
        abort.check()?;
        let input = Members::from_value(input, "input", invalid)?;
        let input = self.redactor.redact_members(input);
        let answer = self.answer(op, &input, abort).await?;
        let value = |text: String| {
            serde_json::from_str(&text).map_err(|e| PrismError::internal(e.to_string()))
        };
        Ok(Outcome {
            result: value(self.redacted_result(answer.result).text().to_string())?,
            event: match answer.event {
                Some(e) => Some(value(self.redacted(e))?),
                None => None,
            },
            body: answer.body,
        })
    }

    /// [`Self::call`] answering JSON text `{"result", "event"?, "body"?}` (the binding's):
    /// `input_text` is the request's JSON text as `JSON.stringify` wrote it, `input` its
    /// members ([`input::read_request`]). Values are redacted by scanning their text,
    /// walked only when a secret may occur (see [`SecretRedactor::leaves_text_unchanged`]).
    pub async fn call_json(
        &self,
        op: &str,
        input: Members,
        input_text: &str,
        abort: &AbortFlag,
    ) -> Result<String> {
        abort.check()?;
        let input = if self.redactor.leaves_text_unchanged(input_text, false) {
            input
        } else {
            self.redactor.redact_members(input)
        };
        let answer = self.answer(op, &input, abort).await?;
        let result = self.redacted_result(answer.result);
        let event = answer.event.map(|e| self.redacted(e));
        let body = answer.body.map(|b| b.to_string());
        Ok(result.answer(&[("event", event), ("body", body)]))
    }

    /// The redacted JSON text of an event: its text when redaction cannot change it, else
    /// the text of the walked value.
    fn redacted(&self, v: Value) -> String {
        let text = v.to_string();
        if self.redactor.leaves_text_unchanged(&text, true) {
            return text;
        }
        self.redactor.redact_value(v).to_string()
    }

    /// A result's text redacted: kept as is when redaction cannot change it, else the
    /// text of its walked value.
    fn redacted_result(&self, text: ResultText) -> ResultText {
        if self.redactor.leaves_text_unchanged(text.text(), true) {
            return text;
        }
        match serde_json::from_str::<Value>(text.text()) {
            Ok(v) => ResultText::of(&self.redactor.redact_value(v).to_string()),
            // Unreachable (the text was serialized here); never answer it unredacted.
            Err(_) => ResultText::of(&Value::String(super::redact::MARKER.into()).to_string()),
        }
    }

    async fn answer(&self, op: &str, input: &Members, abort: &AbortFlag) -> Result<Answer> {
        match op {
            "attach" => self.attach(input, abort).await,
            "list" => self.list(input, abort).await,
            "get" => self.get(input, abort).await,
            "revise" => self.revise(input, abort).await,
            "compare" => self.compare(input, abort).await,
            "approve" => self.decide(input, Decision::Approved, abort).await,
            "reject" => self.decide(input, Decision::Rejected, abort).await,
            "lastValidated" => self.last_validated(input, abort).await,
            "deliveryLink" => self.delivery_link(input, abort).await,
            other => Err(PrismError::type_error(format!(
                "unknown artifact operation {other:?}"
            ))),
        }
        // Messages may quote a field name of the request: never a registered secret.
        .map_err(|e| self.redactor.redact_error(e))
    }

    fn ctx(&self, f: &Fields<'_>) -> Result<Ctx> {
        let now = time::now_ms();
        let owner = input::ownership(f.get("ownership"), &self.redactor)?;
        let actor = input::identity(f.get("identity"), &owner, now)?;
        Ok(Ctx { owner, actor, now })
    }

    /// An `ArtifactDecisionEvent` (the reference's shape), plus the owner members and,
    /// for decisions, the decided `state`; `None` when nobody listens for events.
    fn event(
        &self,
        kind: &str,
        rec: &Record,
        version: u64,
        ctx: &Ctx,
        who: Who<'_>,
    ) -> Option<Value> {
        if !self.config.events {
            return None;
        }
        let mut e = Map::new();
        e.insert("type".into(), json!(kind));
        e.insert("artifactId".into(), json!(rec.id));
        e.insert("threadId".into(), json!(rec.thread_id));
        e.insert("version".into(), json!(version));
        match who {
            Who::Actor(Some(a)) => {
                e.insert("actor".into(), json!(a));
            }
            Who::Actor(None) => {}
            Who::Reviewer(r, _) => {
                e.insert("reviewer".into(), json!(r));
            }
        }
        e.insert("timestamp".into(), json!(time::format_iso(ctx.now)));
        ctx.owner.spread_into(&mut e);
        if let Who::Reviewer(_, state) = who {
            e.insert("state".into(), json!(state));
        }
        Some(Value::Object(e))
    }

    /// The record's JSON text, within the record size cap.
    fn check_record_size(&self, rec: &Record) -> Result<ResultText> {
        let text = ResultText::record(rec);
        let n = text.text().len();
        if n as u64 > self.config.limits.record_bytes {
            return Err(input::too_large(
                R::RecordTooLarge,
                "the artifact record",
                n,
                self.config.limits.record_bytes,
            ));
        }
        Ok(text)
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
            change_note: input::bounded(f, "changeNote", l.note_bytes, R::NoteTooLarge, false)?,
            producer_run_id: input::producer_run_id(f)?,
            citations: input::citations(f, l)?,
            preview: input::preview(f, l)?,
            title: input::bounded(f, "title", l.title_bytes, R::TitleTooLarge, false)?,
            created_by: ctx.actor.clone(),
            created_at: time::format_iso(ctx.now),
        })
    }

    /// The record `attach` creates (validated completely, nothing stored yet).
    fn new_record(&self, f: &Fields<'_>, ctx: &Ctx, thread: String, id: String) -> Result<Record> {
        let l = &self.config.limits;
        let kind = input::bounded(f, "kind", l.title_bytes, R::TitleTooLarge, false)?;
        let mime =
            input::bounded(f, "mime", l.mime_bytes, R::MimeTooLarge, true)?.unwrap_or_default();
        let revision = self.revision_from(f, 1, mime, ctx)?;
        let at = time::format_iso(ctx.now);
        Ok(Record {
            id,
            thread_id: thread,
            owner: ctx.owner.clone(),
            kind,
            title: revision.title.clone(),
            state: ReviewState::Pending,
            latest_version: 1,
            last_validated_version: None,
            revisions: vec![revision],
            approvals: Vec::new(),
            created_at: at.clone(),
            updated_at: at,
        })
    }

    async fn attach(&self, v: &Members, abort: &AbortFlag) -> Result<Answer> {
        let f = fields(v, &[&REVISION, &["id", "kind"]])?;
        let ctx = self.ctx(&f)?;
        let thread = input::id(&f, "threadId", &self.redactor)?;
        let explicit = f.get("id").is_some();
        let id = if explicit {
            input::id(&f, "id", &self.redactor)?.to_owned()
        } else {
            new_id()
        };
        let rec = self.new_record(&f, &ctx, thread.to_owned(), id.clone())?;
        let text = self.check_record_size(&rec)?;
        let cap = self.config.limits.artifacts_per_thread;
        // One atomic step where the store can: a taken id is the create's conflict.
        let created = match self
            .create_capped(&rec, text.text(), &ctx.owner, abort)
            .await
        {
            Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(count))) => return Err(too_many(thread, count, cap)),
            Some(Err(e)) => Err(e),
            None => {
                if explicit {
                    if let Some((_, existing)) = self.load(thread, &id, &ctx.owner, abort).await? {
                        return Ok(Answer::text(ResultText::record(&existing)));
                    }
                }
                self.create_counted(&rec, text.text(), &ctx, abort).await?
            }
        };
        match created {
            Ok(()) => {
                let who = Who::Actor(ctx.actor.as_deref());
                let event = self.event("artifact_attached", &rec, 1, &ctx, who);
                Ok(Answer::recorded(text, event))
            }
            Err(e) if explicit && e.reason() == Some("conflict") => {
                // The id is taken (an earlier attach, or a create race lost): that
                // record is the answer. Nothing to load means the key is taken in a host
                // store's one key space by another owner: answered exactly as a missing
                // artifact.
                match self.load(thread, &id, &ctx.owner, abort).await? {
                    Some((_, existing)) => Ok(Answer::text(ResultText::record(&existing))),
                    None => Err(not_found(thread, &id)),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// The create of a store that cannot count and write in one step: the thread is
    /// counted before the save and again after it (see [`Self::withdraw_over_cap`]).
    /// `Err` ends the attach; `Ok(Err)` is the save's error.
    async fn create_counted(
        &self,
        rec: &Record,
        text: &str,
        ctx: &Ctx,
        abort: &AbortFlag,
    ) -> Result<Result<()>> {
        let thread = &rec.thread_id;
        let cap = self.config.limits.artifacts_per_thread;
        let count = self.count_thread(thread, &ctx.owner, cap, abort).await?;
        if count >= cap {
            return Err(too_many(thread, count, cap));
        }
        let key = self.key(&rec.thread_id, &rec.id, &ctx.owner, abort);
        match self.save(rec.clone(), text, key, 0, None, abort).await {
            Ok(_) => {
                self.withdraw_over_cap(rec, &ctx.owner, abort).await?;
                Ok(Ok(()))
            }
            Err(e) => Ok(Err(e)),
        }
    }

    /// The count before a create is a snapshot: attaches racing on one thread can all
    /// pass it. Recount with ours included; over the cap, withdraw ours (only while it is
    /// still at its first version, untouched) and refuse, so a thread never keeps more
    /// artifacts than its cap. Racers may both withdraw: a retryable refusal, never an
    /// overfull thread. The record is committed, so the abort signal no longer applies.
    async fn withdraw_over_cap(
        &self,
        rec: &Record,
        owner: &Ownership,
        abort: &AbortFlag,
    ) -> Result<()> {
        let settled = match abort.signal() {
            Some(id) => AbortFlag::with_signal(id),
            None => AbortFlag::new(),
        };
        let cap = self.config.limits.artifacts_per_thread;
        let after = self
            .count_thread(&rec.thread_id, owner, cap.saturating_add(1), &settled)
            .await
            .unwrap_or(0);
        if after <= cap {
            return Ok(());
        }
        let key = self.key(&rec.thread_id, &rec.id, owner, &settled);
        if self.store.delete(&key, Some(1)).await.unwrap_or(false) {
            return Err(err(
                R::TooManyArtifacts,
                format!(
                    "thread {} reached its cap of {cap} artifacts",
                    rec.thread_id
                ),
            ));
        }
        Ok(())
    }

    async fn list(&self, v: &Members, abort: &AbortFlag) -> Result<Answer> {
        let f = fields(v, &[&["cursor", "limit"]])?;
        let ctx = self.ctx(&f)?;
        let thread = input::id(&f, "threadId", &self.redactor)?;
        let page_cap = self.config.limits.list_page_limit;
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
        let mut query = self.thread_query(thread, &ctx.owner, abort);
        query.cursor = cursor;
        query.limit = Some(u32::try_from(limit).unwrap_or(200));
        let page = self.store.list_text(query).await?;
        abort.check()?;
        // `{"items":[…],"nextCursor"?}`, each item a record's text (as stored where the
        // store kept this service's text as given), never built as a value (issue 13).
        let texts = page
            .items
            .iter()
            .map(|cp| cp.value_text().len())
            .sum::<usize>();
        let mut out = ResultText::with_capacity(texts + page.items.len() + 64);
        out.0.push_str("{\"items\":[");
        let mut first = true;
        for cp in &page.items {
            if let Some(text) = self.listed_text(cp, &ctx.owner, thread)? {
                if !first {
                    out.0.push(',');
                }
                first = false;
                out.0.push_str(&text);
            }
        }
        out.0.push(']');
        if let Some(c) = &page.next_cursor {
            out.0.push_str(",\"nextCursor\":");
            crate::json::push_json_str(&mut out.0, c);
        }
        out.0.push('}');
        Ok(Answer::text(out))
    }

    async fn get(&self, v: &Members, abort: &AbortFlag) -> Result<Answer> {
        let f = fields(v, &[&["artifactId"]])?;
        let ctx = self.ctx(&f)?;
        let thread = input::id(&f, "threadId", &self.redactor)?;
        let artifact = input::id(&f, "artifactId", &self.redactor)?;
        self.load_text(thread, artifact, &ctx.owner, abort)
            .await?
            .map(Answer::text)
            .ok_or_else(|| not_found(thread, artifact))
    }

    async fn revise(&self, v: &Members, abort: &AbortFlag) -> Result<Answer> {
        let f = fields(v, &[&REVISION, &["artifactId"]])?;
        let ctx = self.ctx(&f)?;
        let l = &self.config.limits;
        input::id(&f, "threadId", &self.redactor)?;
        input::id(&f, "artifactId", &self.redactor)?;
        let mime = input::bounded(&f, "mime", l.mime_bytes, R::MimeTooLarge, false)?;
        // Validate the whole revision before any store call (the MIME is filled in below).
        let revision = self.revision_from(&f, 0, String::new(), &ctx)?;
        self.replace(&f, &ctx, abort, |rec| {
            self.revised(rec, revision.clone(), mime.as_deref(), &ctx)
        })
        .await
    }

    /// `rec` with `revision` added (its MIME `mime`, or the latest revision's), its text
    /// and the event of its save.
    fn revised(
        &self,
        rec: &mut Record,
        mut revision: Revision,
        mime: Option<&str>,
        ctx: &Ctx,
    ) -> Result<(ResultText, Option<Value>)> {
        let l = &self.config.limits;
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
        revision.mime = mime.map_or(previous_mime, str::to_string);
        revision.version = rec
            .latest_version
            .checked_add(1)
            .ok_or_else(|| PrismError::internal("revision counter overflow"))?;
        let number = revision.version;
        if revision.title.is_some() {
            rec.title = revision.title.clone();
        }
        rec.revisions.push(revision);
        rec.latest_version = number;
        rec.updated_at = time::format_iso(ctx.now);
        rec.refresh_state();
        let text = self.check_record_size(rec)?;
        // Made before the save, which takes the record (delivered only once it is saved).
        let who = Who::Actor(ctx.actor.as_deref());
        let event = self.event("artifact_revised", rec, number, ctx, who);
        Ok((text, event))
    }

    /// Replace the record `threadId`/`artifactId` name with what `change` makes of it
    /// (its text, within the cap, and the event its save delivers), saved by
    /// compare-and-swap over the version it was loaded at. The record comes from the
    /// store's memory of this service's own last write of it where there is one (no read:
    /// issue 13); should that prove stale (`change` refused it, or the save found another
    /// value stored: another process or connection wrote since), it is loaded and changed
    /// again, as if it had been loaded in the first place.
    async fn replace(
        &self,
        f: &Fields<'_>,
        ctx: &Ctx,
        abort: &AbortFlag,
        change: impl Fn(&mut Record) -> Result<(ResultText, Option<Value>)>,
    ) -> Result<Answer> {
        let mut then = Use::ReplaceRecent;
        loop {
            let Loaded {
                version,
                record: mut rec,
                key,
                over,
            } = self.load_required(f, ctx, then, abort).await?;
            let recalled = over.is_some();
            let (text, event) = match change(&mut rec) {
                Err(_) if recalled => {
                    then = Use::Replace;
                    continue;
                }
                changed => changed?,
            };
            let saved = self
                .save(rec, text.text(), key, version, over.as_ref(), abort)
                .await;
            match saved {
                Err(e) if recalled && e.kind == ErrorKind::Artifact(R::Conflict) => {
                    then = Use::Replace;
                }
                saved => return saved.map(|()| Answer::recorded(text, event)),
            }
        }
    }

    async fn compare(&self, v: &Members, abort: &AbortFlag) -> Result<Answer> {
        let f = fields(v, &[&["artifactId", "from", "to"]])?;
        let ctx = self.ctx(&f)?;
        let from = input::version(&f, "from", true)?.unwrap_or_default();
        let to = input::version(&f, "to", true)?.unwrap_or_default();
        if from == to {
            return Err(invalid(
                "compare takes two distinct revisions (from != to)".into(),
            ));
        }
        self.read_required(&f, &ctx, abort, |rec| {
            let missing = |n: u64| err(R::NotFound, format!("revision {n} not found"));
            let a = rec.revision(from).ok_or_else(|| missing(from))?;
            let b = rec.revision(to).ok_or_else(|| missing(to))?;
            let empty = Vec::new();
            Answer::serialized(&Comparison {
                artifact_id: &rec.id,
                from,
                to,
                changed: Changed {
                    hash: a.hash != b.hash,
                    mime: a.mime != b.mime,
                    uri: a.uri != b.uri,
                    citations: a.citations.as_ref().unwrap_or(&empty)
                        != b.citations.as_ref().unwrap_or(&empty),
                },
            })
        })
        .await
    }

    async fn decide(&self, v: &Members, state: Decision, abort: &AbortFlag) -> Result<Answer> {
        let f = fields(v, &[&["artifactId", "version", "reviewer", "note"]])?;
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
        let decision = |rec: &mut Record| {
            self.decided(rec, state, version, reviewer.clone(), note.clone(), &ctx)
        };
        self.replace(&f, &ctx, abort, decision).await
    }

    /// `rec` with `reviewer`'s decision `state` (and `note`) on revision `version`, its
    /// text and the event of its save.
    fn decided(
        &self,
        rec: &mut Record,
        state: Decision,
        version: u64,
        reviewer: String,
        note: Option<String>,
        ctx: &Ctx,
    ) -> Result<(ResultText, Option<Value>)> {
        let rev = rec
            .revision(version)
            .ok_or_else(|| err(R::NotFound, format!("revision {version} not found")))?;
        let evidence_digest = match state {
            Decision::Approved => Some(binding_digest(rev.citations.as_deref().unwrap_or(&[]))),
            Decision::Rejected => None,
        };
        let at = time::format_iso(ctx.now);
        rec.approvals.retain(|a| a.version != version);
        rec.approvals.push(Approval {
            version,
            state,
            reviewer,
            note,
            evidence_digest,
            decided_at: at.clone(),
        });
        rec.approvals.sort_by_key(|a| a.version);
        rec.last_validated_version = match state {
            Decision::Approved => Some(
                rec.last_validated_version
                    .map_or(version, |v| v.max(version)),
            ),
            // Rejecting the validated revision revokes it: fall back to the newest
            // revision still approved, or none. Rejecting any other never clears it.
            Decision::Rejected if rec.last_validated_version == Some(version) => rec
                .approvals
                .iter()
                .filter(|a| a.state == Decision::Approved)
                .map(|a| a.version)
                .max(),
            Decision::Rejected => rec.last_validated_version,
        };
        rec.updated_at = at;
        rec.refresh_state();
        let text = self.check_record_size(rec)?;
        let kind = match state {
            Decision::Approved => "artifact_approved",
            Decision::Rejected => "artifact_rejected",
        };
        // Made before the save, which takes the record (delivered only once it is saved).
        let reviewer = rec.decision(version).map_or("", |a| a.reviewer.as_str());
        let event = self.event(kind, rec, version, ctx, Who::Reviewer(reviewer, state));
        Ok((text, event))
    }

    async fn last_validated(&self, v: &Members, abort: &AbortFlag) -> Result<Answer> {
        let f = fields(v, &[&["artifactId"]])?;
        let ctx = self.ctx(&f)?;
        self.read_required(&f, &ctx, abort, |rec| {
            let Some(n) = rec.last_validated_version else {
                return Err(err(
                    R::NotValidated,
                    format!("artifact {} has no approved revision", rec.id),
                ));
            };
            let rev = rec
                .revision(n)
                .ok_or_else(|| err(R::NotFound, format!("validated revision {n} not found")))?;
            Answer::serialized(rev)
        })
        .await
    }

    /// `ttlSeconds`: absent → the cap; otherwise an integer in `1..=cap`, else a
    /// `RangeError` (as the reference's service).
    fn ttl(&self, f: &Fields<'_>) -> Result<u64> {
        let max = self.config.limits.delivery_link_ttl_seconds;
        match f.get("ttlSeconds") {
            None => Ok(max),
            Some(v) => crate::json::as_u64(v)
                .filter(|t| (1..=max).contains(t))
                .ok_or_else(|| {
                    PrismError::range(format!(
                        "ttlSeconds must be a positive safe integer <= {max}, got {v}"
                    ))
                }),
        }
    }

    async fn delivery_link(&self, v: &Members, abort: &AbortFlag) -> Result<Answer> {
        let f = fields(v, &[&["artifactId", "version", "ttlSeconds"]])?;
        let ctx = self.ctx(&f)?;
        let version = input::version(&f, "version", false)?;
        let ttl = self.ttl(&f)?;
        self.read_required(&f, &ctx, abort, |rec| {
            let version = version
                .or(rec.last_validated_version)
                .unwrap_or(rec.latest_version);
            if rec.revision(version).is_none() {
                return Err(err(R::NotFound, format!("revision {version} not found")));
            }
            let token = link::issue(&rec.id, &rec.thread_id, version, &ctx.owner, ttl, ctx.now);
            let l = &self.config.limits;
            let delivery = link::delivery_text(
                &token,
                &self.config.link_secret,
                l.delivery_link_token_bytes,
            )?;
            let mut out = Answer::text(ResultText::of(&delivery));
            if self.config.bodies {
                out.body = Some(self.body_request(rec, version, &ctx, ttl)?);
            }
            Ok(out)
        })
        .await
    }

    /// What `bodies.presign` is asked for a delivery: the revision's body ref (its hash
    /// without a `sha256:` prefix), `ttlMs` = the link's TTL, and `notAfter` = the link's
    /// expiry (epoch ms), so the URL never outlives the link. A revision without a
    /// recorded size cannot address a body: `invalid_input`.
    fn body_request(&self, rec: &Record, version: u64, ctx: &Ctx, ttl: u64) -> Result<Value> {
        let rev = rec
            .revision(version)
            .ok_or_else(|| err(R::NotFound, format!("revision {version} not found")))?;
        let Some(size) = rev.size else {
            return Err(err(
                R::InvalidInput,
                format!("revision {version} has no recorded size; its body cannot be addressed"),
            ));
        };
        let hash = rev.hash.strip_prefix("sha256:").unwrap_or(&rev.hash);
        let mut r = serde_json::json!({
            "artifactId": rec.id,
            "threadId": rec.thread_id,
            "version": version,
            "mime": rev.mime,
            "size": size,
            "hash": hash,
        });
        if let (Value::Object(m), Value::Object(o)) = (
            &mut r,
            serde_json::to_value(&ctx.owner).unwrap_or(Value::Null),
        ) {
            m.extend(o);
        }
        Ok(serde_json::json!({
            "ref": r,
            "ttlMs": ttl * 1000,
            "notAfter": ctx.now + (ttl as i64) * 1000,
        }))
    }
}

#[cfg(test)]
mod tests;
