//! Session artifacts as the agent's tools see them: loose references
//! resolved carefully, lifecycles enforced, edits through Adit.

use super::db::{Db, Origin};
use super::error::{Result, StoreError};
use super::model::{Lifecycle, SessionArtifact};
use crate::adit::{self, Edit};
use crate::platform;

/// Shortest id prefix accepted as a reference.
const MIN_PREFIX: usize = 4;

/// Finds the artifact `reference` names in the session: exact id, then a
/// unique id prefix, then exact title, then case-insensitive title. Several
/// matches at one rung are an error listing them, never a guess.
pub fn resolve<'a>(artifacts: &'a [SessionArtifact], reference: &str) -> Result<&'a SessionArtifact> {
    let reference = reference.trim();
    let lower = reference.to_lowercase();
    let rungs: [&dyn Fn(&SessionArtifact) -> bool; 4] = [
        &|a| a.id == reference,
        &|a| reference.len() >= MIN_PREFIX && a.id.starts_with(reference),
        &|a| a.title == reference,
        &|a| a.title.to_lowercase() == lower,
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

impl Db {
    /// Resolves `reference` among the session's artifacts.
    pub async fn resolve_artifact(&self, session_id: &str, reference: &str) -> Result<SessionArtifact> {
        let all = self.artifacts(session_id).await?;
        resolve(&all, reference).cloned()
    }

    /// Applies Adit edits to an artifact (atomic; lifecycle enforced); returns it updated.
    pub async fn edit_artifact(
        &self,
        session_id: &str,
        reference: &str,
        edits: &[Edit],
        origin: Origin,
    ) -> Result<SessionArtifact> {
        let mut artifact = self.resolve_artifact(session_id, reference).await?;
        let applied = adit::apply_edits(&artifact.content, edits).map_err(|e| StoreError::Edit(e.to_string()))?;
        check_lifecycle(&artifact, &applied.text)?;
        artifact.content = applied.text;
        artifact.updated_at = platform::now_ms();
        self.save_artifact(&artifact, Some(origin), "edit_artifact").await?;
        Ok(artifact)
    }

    /// Replaces an artifact's content (lifecycle enforced).
    pub async fn replace_artifact(
        &self,
        session_id: &str,
        reference: &str,
        content: &str,
        origin: Origin,
    ) -> Result<SessionArtifact> {
        let mut artifact = self.resolve_artifact(session_id, reference).await?;
        check_lifecycle(&artifact, content)?;
        artifact.content = content.to_owned();
        artifact.updated_at = platform::now_ms();
        self.save_artifact(&artifact, Some(origin), "update_artifact").await?;
        Ok(artifact)
    }

    /// Deletes an artifact the agent names; static ones are refused (the person can still delete them).
    pub async fn agent_delete_artifact(&self, session_id: &str, reference: &str) -> Result<SessionArtifact> {
        let artifact = self.resolve_artifact(session_id, reference).await?;
        if artifact.lifecycle == Lifecycle::Static {
            return Err(StoreError::Lifecycle {
                id: artifact.id,
                lifecycle: "static",
                detail: "it is read-only".into(),
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
