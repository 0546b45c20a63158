//! The operations of [`WorkDraftService`].

use super::super::model::{Decision, Draft, Execution, Status};
use super::super::recipients::RecipientSpec;
use super::super::{payload, werr, CREATE_ONLY, DECISION};
use super::{name, new_id, text, Ctx, Outcome, WorkDraftService};
use crate::artifacts::AbortFlag;
use crate::error::{Result, WorkDraftReason as R};
use crate::json::Fields;
use serde_json::{json, Value};

impl WorkDraftService {
    pub(super) async fn create(&self, v: &Value, abort: &AbortFlag) -> Result<Outcome> {
        let allowed: Vec<&str> = ["draftId", "author"]
            .into_iter()
            .chain(CREATE_ONLY)
            .collect();
        let f = self.fields(v, &allowed)?;
        let ctx = self.ctx(&f)?;
        let l = self.config.limits;
        let thread = self.id(&f, "threadId")?;
        let provider = name(&f, "provider", true)?.unwrap_or_default();
        let op = name(&f, "op", true)?.unwrap_or_default();
        let idem = name(&f, "idempotencyKey", false)?;
        let author = ctx.actor.clone().or(name(&f, "author", false)?);
        let id = match f.get("draftId") {
            Some(_) => self.id(&f, "draftId")?,
            None => new_id(idem.as_deref()),
        };
        let body = f
            .get("payload")
            .ok_or_else(|| f.fail("payload", "is required (an object)"))?;
        payload::check(body, "input.payload", R::InvalidInput, &l)?;
        let compiled = match f.get("schema") {
            Some(s) => Some(self.schemas.get(s, l.schema_bytes())?),
            None => None,
        };
        if let Some(c) = &compiled {
            c.validate(body)?;
        }
        let spec = RecipientSpec::parse(f.get("recipients"), f.get("scopes"), l.recipient_paths())?;
        let addresses = spec.check_new(body)?;
        self.check_policy(&addresses).await?;
        let (paths, scopes) = spec.stored();
        let mut d = Draft {
            id: id.clone(),
            thread_id: thread.clone(),
            owner: ctx.owner.clone(),
            provider,
            op,
            schema: f.get("schema").cloned(),
            recipients: f.get("recipients").map(|_| paths),
            scopes: f.get("scopes").map(|_| scopes),
            idempotency_key: idem,
            status: Status::Pending,
            version: 0,
            latest_revision: 1,
            revisions: vec![self.revision(1, body.clone(), author.clone(), &ctx.now)],
            approvals: Vec::new(),
            execution: None,
            created_at: ctx.now.clone(),
            updated_at: ctx.now.clone(),
        };
        let explicit = f.get("draftId").is_some() || d.idempotency_key.is_some();
        if explicit {
            if let Some(existing) = self.load(&thread, &id, &ctx.owner, abort).await? {
                return same_draft(existing, &d);
            }
        }
        match self.save(&mut d, &ctx.owner, abort).await {
            Ok(value) => {
                let event = self.event("work_draft_created", &d, &ctx, author.as_deref());
                Ok(Outcome {
                    result: value,
                    event: Some(event),
                })
            }
            Err(e) if explicit && e.reason() == Some("conflict") => {
                // Lost a create race for the same id: the winner's draft is the answer.
                match self.load(&thread, &id, &ctx.owner, abort).await? {
                    Some(existing) => same_draft(existing, &d),
                    None => Err(super::not_found(&thread, &id)),
                }
            }
            Err(e) => Err(e),
        }
    }

    pub(super) async fn get(&self, v: &Value, abort: &AbortFlag) -> Result<Outcome> {
        let f = self.fields(v, &["draftId", "signal"])?;
        let ctx = self.ctx(&f)?;
        let d = self.load_required(&f, &ctx, None, abort).await?;
        Ok(quiet(d.to_value()))
    }

    pub(super) async fn list(&self, v: &Value, abort: &AbortFlag) -> Result<Outcome> {
        let f = self.fields(v, &["cursor", "limit", "signal"])?;
        let ctx = self.ctx(&f)?;
        let thread = self.id(&f, "threadId")?;
        let cap = self.config.limits.list_page_limit();
        let limit = match f.opt_u64("limit")? {
            Some(0) => return Err(f.fail("limit", "must be a positive integer")),
            Some(n) => n.min(cap),
            None => cap,
        };
        let cursor = text(&f, "cursor", crate::store::model::MAX_CURSOR_BYTES as u64)?;
        abort.check()?;
        let page = self
            .store
            .list(crate::store::ListCheckpoints {
                namespace: Some(super::NAMESPACE.into()),
                key_prefix: Some(format!("{thread}:")),
                owner: ctx.owner.clone(),
                exact_owner: true,
                cursor,
                limit: Some(u32::try_from(limit).unwrap_or(200)),
                signal: abort.signal(),
                ..Default::default()
            })
            .await
            .map_err(|e| match e.kind {
                crate::error::ErrorKind::CheckpointConflict => werr(R::InvalidInput, e.message),
                _ => e,
            })?;
        abort.check()?;
        let mut items = Vec::with_capacity(page.items.len());
        for cp in page.items {
            if let Some(d) = self.draft_of(cp, &ctx.owner)? {
                if d.thread_id == thread {
                    items.push(d.to_value());
                }
            }
        }
        let mut result = json!({ "items": items });
        if let Some(c) = page.next_cursor {
            result["nextCursor"] = Value::String(c);
        }
        Ok(quiet(result))
    }

    /// The edit a decision carries (`modifiedArguments`, or AG-UI's `editedArgs`).
    fn edit_of<'a>(&self, f: &Fields<'a>, decision: Decision) -> Result<Option<&'a Value>> {
        let edit = match (f.get("modifiedArguments"), f.get("editedArgs")) {
            (Some(_), Some(_)) => {
                return Err(werr(
                    R::MalformedEdit,
                    "give modifiedArguments or editedArgs, not both",
                ))
            }
            (a, b) => a.or(b),
        };
        if let Some(e) = edit {
            if decision == Decision::Deny {
                return Err(werr(
                    R::MalformedEdit,
                    "a deny decision cannot carry modifiedArguments",
                ));
            }
            payload::check(
                e,
                "modifiedArguments",
                R::MalformedEdit,
                &self.config.limits,
            )?;
        }
        Ok(edit)
    }

    pub(super) async fn decide(&self, v: &Value, abort: &AbortFlag) -> Result<Outcome> {
        if let Some(k) = CREATE_ONLY.iter().find(|k| v.get(**k).is_some()) {
            return Err(werr(
                R::ImmutableField,
                format!("input.{k} is set by create and cannot be changed"),
            ));
        }
        let allowed: Vec<&str> = ["draftId", "signal"].into_iter().chain(DECISION).collect();
        let f = self.fields(v, &allowed)?;
        let ctx = self.ctx(&f)?;
        let expected = Self::expected_version(&f)?;
        let decision = match f.opt_str("decision")? {
            Some("approve") => Decision::Approve,
            Some("deny") => Decision::Deny,
            _ => return Err(f.fail("decision", "must be \"approve\" or \"deny\"")),
        };
        let edit = self.edit_of(&f, decision)?;
        let reason = text(&f, "reason", self.config.limits.reason_bytes())?;
        let reviewer = ctx
            .actor
            .clone()
            .or(name(&f, "reviewer", false)?)
            .ok_or_else(|| {
                super::invalid(
                    "a decision needs a verified identity or an explicit reviewer".into(),
                )
            })?;
        let (mut d, latest) = self.load_open(&f, &ctx, expected, abort).await?;
        let edited = match edit {
            Some(e) if payload::digest(e) != latest.payload_digest => Some(e),
            _ => None,
        };
        let kind = match (edited, decision) {
            (Some(e), _) => {
                self.apply_edit(&mut d, &latest.payload, e, &reviewer, reason.clone(), &ctx)
                    .await?;
                "work_draft_edited"
            }
            (None, decision) => {
                d.invalidate(latest.revision, true, &ctx.now);
                let a = self.approval(&latest, decision, &reviewer, reason, &ctx.now);
                d.approvals.push(a);
                if decision == Decision::Approve {
                    "work_draft_approved"
                } else {
                    "work_draft_denied"
                }
            }
        };
        d.updated_at = ctx.now.clone();
        d.refresh_status();
        let value = self.save(&mut d, &ctx.owner, abort).await?;
        let event = self.event(kind, &d, &ctx, Some(&reviewer));
        Ok(Outcome {
            result: value,
            event: Some(event),
        })
    }

    /// Append the edited revision (checked against the latest one), invalidate every
    /// decision on earlier revisions, and approve it unless edits need reapproval.
    async fn apply_edit(
        &self,
        d: &mut Draft,
        previous: &Value,
        edited: &Value,
        reviewer: &str,
        reason: Option<String>,
        ctx: &Ctx,
    ) -> Result<()> {
        let cap = self.config.limits.revisions_per_draft();
        if d.revisions.len() as u64 >= cap {
            return Err(werr(
                R::TooManyRevisions,
                format!(
                    "draft {} already has {} revisions; the cap is {cap}",
                    d.id,
                    d.revisions.len()
                ),
            ));
        }
        payload::check_immutable(previous, edited)?;
        if let Some(s) = &d.schema {
            self.schemas
                .get(s, crate::drafts::DraftLimits::hard().schema_bytes())?
                .validate(edited)?;
        }
        let addresses = self.spec_of(d)?.check_edit(previous, edited)?;
        self.check_policy(&addresses).await?;
        let number = d.latest_revision + 1;
        let rev = self.revision(number, edited.clone(), Some(reviewer.to_string()), &ctx.now);
        d.invalidate(number, false, &ctx.now);
        if !self.config.edits_require_reapproval {
            let a = self.approval(&rev, Decision::Approve, reviewer, reason, &ctx.now);
            d.approvals.push(a);
        }
        d.revisions.push(rev);
        d.latest_revision = number;
        Ok(())
    }

    pub(super) async fn claim(&self, v: &Value, abort: &AbortFlag) -> Result<Outcome> {
        let f = self.fields(
            v,
            &[
                "draftId",
                "expectedVersion",
                "payloadDigest",
                "claimedBy",
                "signal",
            ],
        )?;
        let ctx = self.ctx(&f)?;
        let expected = Self::expected_version(&f)?;
        let digest = f.str("payloadDigest")?;
        if digest.len() != 64
            || !digest
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(f.fail(
                "payloadDigest",
                "must be 64 lowercase hex digits (draftPayloadDigest)",
            ));
        }
        let claimed_by = ctx.actor.clone().or(name(&f, "claimedBy", false)?);
        let (mut d, latest) = self.load_open(&f, &ctx, expected, abort).await?;
        // The stored payload must still be the one its digest (and so any approval) names.
        if payload::digest(&latest.payload) != latest.payload_digest {
            return Err(werr(
                R::NotApproved,
                format!(
                    "revision {} of draft {} no longer matches its digest; it cannot execute",
                    latest.revision, d.id
                ),
            ));
        }
        let live = d.live_decision().filter(|a| {
            a.decision == Decision::Approve && a.payload_digest == latest.payload_digest
        });
        if live.is_none() {
            return Err(werr(
                R::NotApproved,
                format!(
                    "revision {} of draft {} has no live approval",
                    latest.revision, d.id
                ),
            ));
        }
        if digest != latest.payload_digest {
            return Err(werr(
                R::NotApproved,
                format!(
                    "the payload about to run is not the approved revision {} of draft {}",
                    latest.revision, d.id
                ),
            ));
        }
        d.execution = Some(Execution {
            revision: latest.revision,
            payload_digest: latest.payload_digest.clone(),
            claimed_at: ctx.now.clone(),
            claimed_by: claimed_by.clone(),
            finished_at: None,
            outcome: None,
            error: None,
        });
        d.status = Status::Executing;
        d.updated_at = ctx.now.clone();
        let value = self.save(&mut d, &ctx.owner, abort).await?;
        let event = self.event(
            "work_draft_execution_claimed",
            &d,
            &ctx,
            claimed_by.as_deref(),
        );
        Ok(Outcome {
            result: value,
            event: Some(event),
        })
    }

    /// `markExecuted` (`ok`) or `markFailed`.
    pub(super) async fn finish(&self, v: &Value, ok: bool, abort: &AbortFlag) -> Result<Outcome> {
        let extra = if ok { "outcome" } else { "error" };
        let f = self.fields(v, &["draftId", "expectedVersion", extra, "signal"])?;
        let ctx = self.ctx(&f)?;
        let l = self.config.limits;
        let expected = Self::expected_version(&f)?;
        let outcome = match f.get("outcome") {
            Some(o) => {
                crate::artifacts::input::check_shape_within(
                    o,
                    "input.outcome",
                    l.payload_depth() as usize,
                )
                .map_err(|e| werr(R::InvalidInput, e.message))?;
                let n = crate::store::value_bytes(o);
                if n as u64 > l.outcome_bytes() {
                    return Err(werr(
                        R::PayloadTooLarge,
                        format!(
                            "input.outcome is {n} bytes; the cap is {}",
                            l.outcome_bytes()
                        ),
                    ));
                }
                Some(o.clone())
            }
            None => None,
        };
        let error = text(&f, "error", l.reason_bytes())?;
        let mut d = self.load_required(&f, &ctx, Some(expected), abort).await?;
        match d.status {
            Status::Executing => {}
            Status::Executed | Status::Failed => return Err(super::WorkDraftService::closed(&d)),
            _ => {
                return Err(werr(
                    R::NotApproved,
                    format!("draft {} was not claimed for execution", d.id),
                ))
            }
        }
        if let Some(x) = d.execution.as_mut() {
            x.finished_at = Some(ctx.now.clone());
            x.outcome = outcome;
            x.error = error;
        }
        d.status = if ok { Status::Executed } else { Status::Failed };
        d.updated_at = ctx.now.clone();
        let value = self.save(&mut d, &ctx.owner, abort).await?;
        let kind = if ok {
            "work_draft_executed"
        } else {
            "work_draft_failed"
        };
        let event = self.event(kind, &d, &ctx, ctx.actor.as_deref());
        Ok(Outcome {
            result: value,
            event: Some(event),
        })
    }
}

fn quiet(result: Value) -> Outcome {
    Outcome {
        result,
        event: None,
    }
}

/// A repeated create of an existing id: the existing draft when it is the same draft
/// (provider, op, schema, declarations, idempotency key, first payload), else `conflict`.
fn same_draft(existing: Draft, new: &Draft) -> Result<Outcome> {
    let first = |d: &Draft| {
        d.revisions
            .iter()
            .find(|r| r.revision == 1)
            .map(|r| r.payload_digest.clone())
    };
    let same = existing.provider == new.provider
        && existing.op == new.op
        && existing.schema == new.schema
        && existing.recipients == new.recipients
        && existing.scopes == new.scopes
        && existing.idempotency_key == new.idempotency_key
        && first(&existing) == first(new);
    if same {
        Ok(quiet(existing.to_value()))
    } else {
        Err(werr(
            R::Conflict,
            format!(
                "draft {} already exists with another payload or declaration",
                existing.id
            ),
        ))
    }
}
