//! The audit trail: one structured log line (target `tfreg::audit`) for every token
//! issued, exchanged, used for the first time, revoked or refused, with the token's id,
//! who it belongs to and why. Never the secret: an id identifies a token without granting
//! anything. A claim is never passed off as a fact: `subject` is who the registry knows
//! the token is for (its own record, or an ID token whose signature it checked);
//! `claimed_subject` is what an unverified token says ([`record_claimed`]).
//! Values from outside (a subject from an ID token, a reason quoting a claim) are escaped
//! ([`crate::text::for_terminal`]): whatever the log's format, no control or disguising
//! character reaches it raw.

use std::borrow::Cow;

/// The log target of audit lines (what a logger filters them by).
pub const TARGET: &str = "tfreg::audit";

/// A value from outside, as an audit line carries it.
fn escaped(value: &str) -> Cow<'_, str> {
    crate::text::for_terminal(value)
}

/// What happened to a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Made by `tfreg token create`, `terraform login` or a web sign-in.
    Issued,
    /// Made for a CI job in exchange for its ID token.
    Exchanged,
    /// Accepted for the first time.
    FirstUse,
    /// Revoked by `tfreg token revoke`.
    Revoked,
    /// Presented and refused, or not issued (a sign-in or exchange that was refused).
    Refused,
}

impl Event {
    /// The value of the line's `event` field.
    pub fn name(self) -> &'static str {
        match self {
            Event::Issued => "token_issued",
            Event::Exchanged => "token_exchanged",
            Event::FirstUse => "token_first_use",
            Event::Revoked => "token_revoked",
            Event::Refused => "token_refused",
        }
    }
}

/// Writes the audit line of one event. `token_id` is `None` when no token exists (a
/// refused sign-in) or none could be read from what was presented; `subject` is who the
/// token was issued to, when known; `reason` says how or why, in words.
pub fn record(event: Event, token_id: Option<&str>, subject: Option<&str>, reason: &str) {
    let name = event.name();
    let (token_id, subject) = (token_id.map(escaped), subject.map(escaped));
    let (token_id, subject, reason) = (token_id.as_deref(), subject.as_deref(), &*escaped(reason));
    match event {
        Event::Refused => tracing::warn!(
            target: TARGET,
            event = name,
            token_id,
            subject,
            reason,
            "audit: {name}"
        ),
        _ => tracing::info!(
            target: TARGET,
            event = name,
            token_id,
            subject,
            reason,
            "audit: {name}"
        ),
    }
}

/// Writes the audit line of a refusal where who it was is only claimed (an ID token whose
/// signature was not, or could not be, checked): the claim goes in `claimed_subject`,
/// never in `subject`.
pub fn record_claimed(event: Event, claimed_subject: Option<&str>, reason: &str) {
    let name = event.name();
    let claimed_subject = claimed_subject.map(escaped);
    let (claimed_subject, reason) = (claimed_subject.as_deref(), &*escaped(reason));
    tracing::warn!(
        target: TARGET,
        event = name,
        claimed_subject,
        reason,
        "audit: {name}"
    );
}

/// What `tfreg deprecate`, `undeprecate`, `yank` and `unyank` did to a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionEvent {
    /// A deprecation written.
    Deprecated,
    /// A deprecation removed.
    Undeprecated,
    /// A version's files deleted, with a yank record.
    Yanked,
    /// A yanked version's files put back and its record removed.
    Unyanked,
}

impl VersionEvent {
    /// The value of the line's `event` field.
    pub fn name(self) -> &'static str {
        match self {
            VersionEvent::Deprecated => "version_deprecated",
            VersionEvent::Undeprecated => "version_undeprecated",
            VersionEvent::Yanked => "version_yanked",
            VersionEvent::Unyanked => "version_unyanked",
        }
    }
}

/// Writes the audit line of a change to a version's life: `version` names it
/// ("module acme/network/aws 1.2.0"), `by` is who the command was told did it, `reason` why.
pub fn record_version(event: VersionEvent, version: &str, by: &str, reason: &str) {
    let name = event.name();
    let (version, by, reason) = (&*escaped(version), &*escaped(by), &*escaped(reason));
    tracing::info!(target: TARGET, event = name, version, by, reason, "audit: {name}");
}
