//! Session artifacts as the agent's tools see them: loose references
//! resolved carefully, lifecycles enforced, edits through Adit.

use super::backend::{Guard, Write};
use super::db::{Db, Origin};
use super::error::{Result, StoreError};
use super::history::{Based, Change};
use serde_json::Value;

use super::db::to_value;
use super::model::stores::*;
use super::model::*;
use crate::platform;

/// Shortest id prefix accepted as a reference.
const MIN_PREFIX: usize = 4;

/// Imports of at least this many records read the artifact store's key list
/// before looking up the artifacts they replace; smaller ones look up their
/// own ids (one read per record, all in one transaction) instead of reading
/// every key of a store that may hold thousands.
const KEY_LIST_FROM: usize = 64;

/// Finds the artifact `reference` names in the session: exact id, then a
/// unique id prefix, then exact title, then case-insensitive title. Several
/// matches at one rung are an error listing them, never a guess.
pub fn resolve<'a>(artifacts: &'a [SessionArtifact], reference: &str) -> Result<&'a SessionArtifact> {
    let reference = reference.trim();
    let lower = crate::platform::lowercase(reference);
    let rungs: [&dyn Fn(&SessionArtifact) -> bool; 4] = [
        &|a| a.id == reference,
        &|a| reference.len() >= MIN_PREFIX && a.id.starts_with(reference),
        &|a| a.title == reference,
        &|a| crate::platform::lowercase(&a.title) == lower,
    ];
    for rung in rungs {
        let found: Vec<&SessionArtifact> = artifacts.iter().filter(|a| rung(a)).collect();
        match found.as_slice() {
            [] => continue,
            [one] => return Ok(one),
            many => {
                return Err(StoreError::Ambiguous {
                    reference: reference.to_owned(),
                    candidates: many.iter().map(|a| format!("{} ({})", a.id, a.title)).collect(),
                })
            }
        }
    }
    Err(StoreError::NotFound { store: "sessionArtifacts".into(), id: reference.to_owned() })
}

fn lifecycle_name(l: Lifecycle) -> &'static str {
    match l {
        Lifecycle::Overwritable => "overwritable",
        Lifecycle::AppendOnly => "append-only",
        Lifecycle::Static => "static",
    }
}

/// Checks that replacing `artifact`'s content with `new` respects its lifecycle.
pub fn check_lifecycle(artifact: &SessionArtifact, new: &str) -> Result<()> {
    let refuse = |detail: &str| StoreError::Lifecycle {
        id: artifact.id.clone(),
        lifecycle: lifecycle_name(artifact.lifecycle),
        detail: detail.to_owned(),
    };
    match artifact.lifecycle {
        Lifecycle::Overwritable => Ok(()),
        Lifecycle::Static => Err(refuse("it is read-only once created")),
        Lifecycle::AppendOnly if new.starts_with(&artifact.content) => Ok(()),
        Lifecycle::AppendOnly => Err(refuse("only additions at the end are allowed")),
    }
}

/// A new active artifact of `session_id`.
fn new_artifact(
    session_id: &str,
    kind: ArtifactType,
    title: &str,
    content: &str,
    lifecycle: Lifecycle,
) -> SessionArtifact {
    let now = platform::now_ms();
    SessionArtifact {
        id: platform::random_id(),
        session_id: session_id.to_owned(),
        kind,
        title: title.to_owned(),
        content: content.to_owned(),
        is_active: true,
        created_at: now,
        updated_at: now,
        lifecycle,
    }
}

/// Checks that `new` may replace the stored `old` version of an artifact:
/// same lifecycle (only `set_artifact_lifecycle` changes it) and content
/// its lifecycle allows.
fn check_replacement(old: &SessionArtifact, new: &SessionArtifact) -> Result<()> {
    if old.lifecycle != new.lifecycle {
        return Err(StoreError::Lifecycle {
            id: old.id.clone(),
            lifecycle: lifecycle_name(old.lifecycle),
            detail: format!(
                "a write cannot make it {} (the person changes lifecycles with setArtifactLifecycle)",
                lifecycle_name(new.lifecycle)
            ),
        });
    }
    if old.content == new.content {
        return Ok(());
    }
    check_lifecycle(old, &new.content)
}

impl Db {
    /// The index entries of the session's artifacts (only the active ones
    /// when `active_only`), newest first: the artifact index reads these
    /// instead of the full contents.
    pub async fn artifact_summaries(&self, session_id: &str, active_only: bool) -> Result<Vec<ArtifactSnippet>> {
        let mut list = self.backend.artifact_index(session_id, active_only).await?;
        super::order::sort_by(&mut list, |a, b| b.created_at.total_cmp(&a.created_at).then_with(|| a.id.cmp(&b.id)));
        Ok(list)
    }

    /// An artifact by exact id.
    pub async fn artifact(&self, id: &str) -> Result<SessionArtifact> {
        self.require(ARTIFACTS, id).await
    }

    /// The session's artifacts, newest first.
    pub async fn artifacts(&self, session_id: &str) -> Result<Vec<SessionArtifact>> {
        let mut list: Vec<SessionArtifact> = self.list(ARTIFACTS, "sessionId", session_id).await?;
        super::order::sort_by(&mut list, |a, b| b.created_at.total_cmp(&a.created_at).then_with(|| a.id.cmp(&b.id)));
        Ok(list)
    }

    /// Stores a new artifact (active).
    pub async fn create_artifact(
        &self,
        session_id: &str,
        kind: ArtifactType,
        title: &str,
        content: &str,
        lifecycle: Lifecycle,
        origin: Origin,
    ) -> Result<SessionArtifact> {
        let artifact = new_artifact(session_id, kind, title, content, lifecycle);
        self.change(ARTIFACTS, &artifact.id, Some(to_value(ARTIFACTS, &artifact)?), Some(origin), "create_artifact")
            .await?;
        Ok(artifact)
    }

    /// Keeps a tool's result as an active artifact, in one batch with the
    /// call's receipt; no revision (a saved read is not something to undo).
    pub async fn save_tool_result(
        &self,
        session_id: &str,
        id: &str,
        kind: ArtifactType,
        title: &str,
        content: &str,
        receipt: &super::Receipt,
    ) -> Result<SessionArtifact> {
        let mut artifact = new_artifact(session_id, kind, title, content, Lifecycle::default());
        artifact.id = id.to_owned();
        let change = Change { store: ARTIFACTS, id: artifact.id.clone(), new: Some(to_value(ARTIFACTS, &artifact)?) };
        self.change_all(vec![change], None, "tool_result", vec![receipt.write()?]).await?;
        Ok(artifact)
    }

    /// Appends `addition` to the append-only note `title` of `session_id`
    /// (created on first use). No revision: a memory note is not something
    /// the person's "undo the agent's change" should reach for.
    pub async fn append_note(&self, session_id: &str, title: &str, addition: &str) -> Result<SessionArtifact> {
        let existing = self.artifacts(session_id).await?.into_iter().find(|a| a.title == title);
        let next = match existing {
            Some(stored) => {
                let mut next = stored.clone();
                if !next.content.is_empty() && !next.content.ends_with('\n') {
                    next.content.push('\n');
                }
                next.content.push_str(addition);
                next.updated_at = platform::now_ms().max(stored.updated_at + 1.0);
                check_replacement(&stored, &next)?;
                next
            }
            None => new_artifact(session_id, ArtifactType::Text, title, addition, Lifecycle::AppendOnly),
        };
        self.change(ARTIFACTS, &next.id, Some(to_value(ARTIFACTS, &next)?), None, "append_note").await?;
        Ok(next)
    }

    /// A `delegate` child's output: creates artifact `id` (text, titled
    /// `title`) or, when it exists in the session, overwrites it under its
    /// lifecycle; in one batch with the child's progress `receipt`, so a
    /// resumed child never writes twice. Undoable like the agent's edits.
    pub async fn write_delegate_output(
        &self,
        session_id: &str,
        id: &str,
        title: &str,
        content: &str,
        receipt: &super::Receipt,
    ) -> Result<()> {
        let artifact = match self.get::<SessionArtifact>(ARTIFACTS, id).await? {
            Some(stored) if stored.session_id == session_id => {
                let mut next = stored.clone();
                next.content = content.to_owned();
                next.updated_at = platform::now_ms().max(stored.updated_at + 1.0);
                check_replacement(&stored, &next)?;
                next
            }
            Some(_) => return Err(StoreError::NotFound { store: ARTIFACTS.to_owned(), id: id.to_owned() }),
            None => {
                let mut created = new_artifact(session_id, ArtifactType::Text, title, content, Lifecycle::default());
                created.id = id.to_owned();
                created
            }
        };
        let change = Change { store: ARTIFACTS, id: id.to_owned(), new: Some(to_value(ARTIFACTS, &artifact)?) };
        self.change_all(vec![change], Some(Origin::Agent), "delegate_output", vec![receipt.write()?]).await
    }

    /// Writes an artifact as given, if the stored one's lifecycle allows the
    /// new content (and the lifecycle itself is unchanged: only
    /// [`Db::set_artifact_lifecycle`] changes it).
    pub async fn save_artifact(&self, artifact: &SessionArtifact, origin: Option<Origin>, reason: &str) -> Result<()> {
        if let Some(stored) = self.get::<SessionArtifact>(ARTIFACTS, &artifact.id).await? {
            check_replacement(&stored, artifact)?;
        }
        self.change(ARTIFACTS, &artifact.id, Some(to_value(ARTIFACTS, artifact)?), origin, reason).await
    }

    /// The person's deliberate change of an artifact's lifecycle (never the
    /// agent's): making a static artifact overwritable is how a person edits
    /// it. Undoable through the history.
    pub async fn set_artifact_lifecycle(&self, id: &str, lifecycle: Lifecycle) -> Result<SessionArtifact> {
        let mut artifact = self.artifact(id).await?;
        artifact.lifecycle = lifecycle;
        artifact.updated_at = platform::now_ms().max(artifact.updated_at + 1.0);
        let value = Some(to_value(ARTIFACTS, &artifact)?);
        self.change(ARTIFACTS, id, value, Some(Origin::User), "set_lifecycle").await?;
        Ok(artifact)
    }

    /// Turns an artifact's context injection on or off.
    pub async fn set_artifact_active(&self, id: &str, active: bool) -> Result<()> {
        let mut artifact = self.artifact(id).await?;
        artifact.is_active = active;
        artifact.updated_at = platform::now_ms();
        self.save_artifact(&artifact, None, "set_active").await
    }

    /// Removes an artifact.
    pub async fn delete_artifact(&self, id: &str, origin: Origin) -> Result<()> {
        self.artifact(id).await?;
        self.change(ARTIFACTS, id, None, Some(origin), "delete_artifact").await
    }

    /// Stores artifacts brought from elsewhere (a backup from `listArtifacts`,
    /// a Dexie app's `sessionArtifacts` rows), replacing any with the same id,
    /// in one batch. Every record is checked first: one that is not an
    /// artifact refuses the whole import and nothing is written. A large
    /// import leaves each session's index to its first read.
    pub async fn import_artifacts(&self, records: Vec<Value>) -> Result<usize> {
        let mut artifacts = Vec::with_capacity(records.len());
        for (i, record) in records.into_iter().enumerate() {
            let id = record.get("id").and_then(Value::as_str).unwrap_or("?").to_owned();
            let artifact: SessionArtifact = crate::json::from_value(record).map_err(|e| StoreError::Invalid {
                field: format!("artifacts[{i}]"),
                message: format!("(id {id}) {e}"),
            })?;
            artifacts.push(artifact);
        }
        let writes_of = |artifacts: &[SessionArtifact]| {
            artifacts
                .iter()
                .map(|a| Ok(Write::Put { store: ARTIFACTS, value: to_value(ARTIFACTS, a)? }))
                .collect::<Result<Vec<_>>>()
        };
        // A small import of artifacts that are all new replaces nothing, so
        // there is nothing to check: written as new records at once (one
        // round trip; any that exists refuses the batch, and the checked
        // path below runs instead).
        if artifacts.len() < KEY_LIST_FROM && self.backend.write_new(writes_of(&artifacts)?).await? {
            return Ok(artifacts.len());
        }
        // The stored artifacts the import would replace are read in the
        // import's own transaction and checked before anything is written: a
        // small import looks up its own ids; a large one first reads the
        // store's key list (keys only), so an import into an empty store
        // looks up nothing.
        let mut keys: Vec<String> = artifacts.iter().map(|a| a.id.clone()).collect();
        if artifacts.len() >= KEY_LIST_FROM {
            let existing: std::collections::HashSet<String> =
                self.backend.all_keys(ARTIFACTS).await?.into_iter().collect();
            keys.retain(|id| existing.contains(id));
        }
        let writes = writes_of(&artifacts)?;
        let check = |found: Vec<Option<Value>>| -> Result<()> {
            let mut stored = std::collections::HashMap::new();
            for value in found.into_iter().flatten() {
                let artifact: SessionArtifact = super::db::from_value(ARTIFACTS, value)?;
                stored.insert(artifact.id.clone(), artifact);
            }
            for (i, artifact) in artifacts.iter().enumerate() {
                let Some(stored) = stored.get(&artifact.id) else { continue };
                if stored.session_id != artifact.session_id {
                    return Err(StoreError::Invalid {
                        field: format!("artifacts[{i}].sessionId"),
                        message: format!("artifact {} belongs to another session; nothing was imported", artifact.id),
                    });
                }
                check_replacement(stored, artifact)?;
            }
            Ok(())
        };
        let count = writes.len();
        let reads = keys.into_iter().map(|key| (ARTIFACTS, key)).collect();
        self.backend.write_guarded(Guard { reads, check: Box::new(check) }, writes).await?;
        Ok(count)
    }

    /// Writes new content for an artifact (its lifecycle allowing it), with
    /// a revision for undo.
    pub async fn set_artifact_content(
        &self,
        mut artifact: SessionArtifact,
        content: String,
        origin: Origin,
        reason: &str,
        also: Vec<Write>,
    ) -> Result<SessionArtifact> {
        check_lifecycle(&artifact, &content)?;
        // Written only if the stored artifact is still the one given.
        let based = Based { store: ARTIFACTS, id: artifact.id.clone(), version: artifact.updated_at };
        artifact.content = content;
        // Always a later version than the one replaced (`updatedAt` is what a
        // versioned edit compares).
        artifact.updated_at = platform::now_ms().max(artifact.updated_at + 1.0);
        let change = Change { store: ARTIFACTS, id: artifact.id.clone(), new: Some(to_value(ARTIFACTS, &artifact)?) };
        self.change_all_based(vec![change], Some(origin), reason, also, vec![based]).await?;
        Ok(artifact)
    }

    /// The person's own edit of an artifact (`editArtifact`): refused for
    /// static artifacts, append-only ones may only grow at the end. With
    /// `based_on` (the `updatedAt` the edit started from), a stale edit fails
    /// with `conflict` carrying the current artifact.
    pub async fn edit_artifact_as_person(
        &self,
        id: &str,
        content: String,
        based_on: Option<f64>,
    ) -> Result<SessionArtifact> {
        let artifact = self.artifact(id).await?;
        if let Some(based_on) = based_on {
            let current = Some((artifact.updated_at, to_value(ARTIFACTS, &artifact)));
            super::projects::next_version(current, based_on, id)?;
        }
        self.set_artifact_content(artifact, content, Origin::User, "edit", Vec::new()).await
    }

    /// Resolves `reference` among the session's artifacts.
    pub async fn resolve_artifact(&self, session_id: &str, reference: &str) -> Result<SessionArtifact> {
        let all = self.artifacts(session_id).await?;
        resolve(&all, reference).cloned()
    }

    /// Deletes an artifact the agent names; static and append-only ones are
    /// refused (their text must stay; the person can still delete them).
    pub async fn agent_delete_artifact(&self, session_id: &str, reference: &str) -> Result<SessionArtifact> {
        let artifact = self.resolve_artifact(session_id, reference).await?;
        if artifact.lifecycle != Lifecycle::Overwritable {
            return Err(StoreError::Lifecycle {
                id: artifact.id,
                lifecycle: lifecycle_name(artifact.lifecycle),
                detail: "its text must stay, so it cannot be deleted by the agent".into(),
            });
        }
        self.delete_artifact(&artifact.id, Origin::Agent).await?;
        Ok(artifact)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::model::ArtifactType;

    fn art(id: &str, title: &str) -> SessionArtifact {
        SessionArtifact {
            id: id.into(),
            session_id: "s".into(),
            kind: ArtifactType::Text,
            title: title.into(),
            content: String::new(),
            is_active: true,
            created_at: 0.0,
            updated_at: 0.0,
            lifecycle: Lifecycle::Overwritable,
        }
    }

    #[test]
    fn resolution_ladder() {
        let list = vec![art("abcd1234", "Search: 東京"), art("abcd9999", "Notes"), art("ffff0000", "notes")];
        assert_eq!(resolve(&list, "abcd1234").unwrap().id, "abcd1234");
        assert_eq!(resolve(&list, "ffff").unwrap().id, "ffff0000");
        assert_eq!(resolve(&list, "Search: 東京").unwrap().id, "abcd1234");
        assert_eq!(resolve(&list, "Notes").unwrap().id, "abcd9999", "exact title wins over case-insensitive");
        assert_eq!(resolve(&list, "search: 東京").unwrap().id, "abcd1234");
        let err = resolve(&list, "abcd").unwrap_err();
        assert_eq!(err.code(), "ambiguous");
        assert!(err.to_string().contains("abcd1234") && err.to_string().contains("abcd9999"));
        assert_eq!(resolve(&list, "NOTES").unwrap_err().code(), "ambiguous");
        assert_eq!(resolve(&list, "ab").unwrap_err().code(), "not_found", "too short a prefix");
    }

    #[test]
    fn lifecycles() {
        let mut a = art("x", "t");
        a.content = "one\n".into();
        assert!(check_lifecycle(&a, "two\n").is_ok());
        a.lifecycle = Lifecycle::AppendOnly;
        assert!(check_lifecycle(&a, "one\ntwo\n").is_ok());
        assert_eq!(check_lifecycle(&a, "two\n").unwrap_err().code(), "lifecycle");
        a.lifecycle = Lifecycle::Static;
        assert_eq!(check_lifecycle(&a, "one\n!").unwrap_err().code(), "lifecycle");
    }
}
