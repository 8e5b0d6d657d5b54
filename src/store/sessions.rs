//! Chat sessions and their transcripts: what a conversation showed, turn by
//! turn, so an app lists its sessions, reopens one with its messages, renames
//! and deletes them. A session's artifacts and checkpoints share its id; a
//! delete takes them all in one batch.

use super::backend::Write;
use super::db::{by_order, from_value, revision_id, to_value, Db};
use super::error::{Result, StoreError};
use super::model::stores::{ARTIFACTS, BLOBS, CHECKPOINTS, GRANTS, RECEIPTS, SESSIONS, TRANSCRIPT};
use super::model::{SessionInfo, Speaker, TranscriptEntry};
use crate::platform;

/// Longest title taken from a session's first message.
const TITLE_CHARS: usize = 60;

/// A title from the first message: its first line, cut on a word where it can be.
fn title_of(input: &str) -> String {
    let line = input.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("New session");
    match line.char_indices().nth(TITLE_CHARS) {
        None => line.to_owned(),
        Some((at, _)) => {
            let cut = line[..at].rfind(' ').filter(|space| *space > at / 2).unwrap_or(at);
            format!("{}…", line[..cut].trim_end())
        }
    }
}

/// The transcript status of an interjection.
pub const INTERJECTION: &str = "interjection";

impl Db {
    /// Every session, most recently used first.
    pub async fn sessions(&self) -> Result<Vec<SessionInfo>> {
        let mut list: Vec<SessionInfo> =
            self.backend().all(SESSIONS).await?.into_iter().map(|v| from_value(SESSIONS, v)).collect::<Result<_>>()?;
        by_order(&mut list, |s| -s.updated_at);
        Ok(list)
    }

    /// A session's messages, oldest first.
    pub async fn transcript(&self, session_id: &str) -> Result<Vec<TranscriptEntry>> {
        let mut entries: Vec<TranscriptEntry> = self.list(TRANSCRIPT, "sessionId", session_id).await?;
        // Ids carry a sequence, so entries of the same millisecond keep their order.
        super::order::sort_by(&mut entries, |a, b| a.created_at.total_cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
        Ok(entries)
    }

    /// Renames a session.
    pub async fn rename_session(&self, session_id: &str, title: &str) -> Result<SessionInfo> {
        let title = title.trim();
        if title.is_empty() {
            return Err(StoreError::Invalid { field: "title".into(), message: "must not be empty".into() });
        }
        let mut session: SessionInfo = self
            .get(SESSIONS, session_id)
            .await?
            .ok_or_else(|| StoreError::NotFound { store: SESSIONS.into(), id: session_id.into() })?;
        session.title = title.chars().take(200).collect();
        session.updated_at = platform::now_ms();
        self.backend().write(vec![Write::Put { store: SESSIONS, value: to_value(SESSIONS, &session)? }]).await?;
        Ok(session)
    }

    /// Deletes a session with its transcript, artifacts, checkpoints and grants, in one batch.
    pub async fn delete_session(&self, session_id: &str) -> Result<()> {
        let mut writes = vec![Write::Delete { store: SESSIONS, key: session_id.to_owned() }];
        for (store, index) in [
            (TRANSCRIPT, "sessionId"),
            (ARTIFACTS, "sessionId"),
            (CHECKPOINTS, "threadId"),
            (BLOBS, "threadId"),
            (RECEIPTS, "sessionId"),
            (GRANTS, "sessionId"),
        ] {
            // Keys only: nothing is loaded to be deleted.
            for key in self.backend().keys_by_index(store, index, session_id).await? {
                writes.push(Write::Delete { store, key });
            }
        }
        self.backend().write(writes).await
    }

    /// Records the person's message of a new turn (creating the session, titled
    /// after it, on its first message).
    pub async fn record_input(&self, session_id: &str, text: &str) -> Result<TranscriptEntry> {
        let now = platform::now_ms();
        let session = match self.get::<SessionInfo>(SESSIONS, session_id).await? {
            Some(mut s) => {
                s.updated_at = now;
                s
            }
            None => SessionInfo { id: session_id.to_owned(), title: title_of(text), created_at: now, updated_at: now },
        };
        let entry = self.entry(session_id, Speaker::Person, text, None);
        self.backend()
            .write(vec![
                Write::Put { store: SESSIONS, value: to_value(SESSIONS, &session)? },
                Write::Put { store: TRANSCRIPT, value: to_value(TRANSCRIPT, &entry)? },
            ])
            .await?;
        Ok(entry)
    }

    /// Records what the person adds while a run works (an interjection): a
    /// transcript entry with status "interjection", which the run's next
    /// model call takes up.
    pub async fn record_interjection(&self, session_id: &str, text: &str) -> Result<TranscriptEntry> {
        let entry = self.entry(session_id, Speaker::Person, text, Some(INTERJECTION.to_owned()));
        self.backend().write(vec![Write::Put { store: TRANSCRIPT, value: to_value(TRANSCRIPT, &entry)? }]).await?;
        Ok(entry)
    }

    /// The session's interjections, oldest first.
    pub async fn interjections(&self, session_id: &str) -> Result<Vec<TranscriptEntry>> {
        let mut all = self.transcript(session_id).await?;
        all.retain(|e| e.status.as_deref() == Some(INTERJECTION));
        Ok(all)
    }

    /// Records the agent's Markdown for a turn. A turn that continues after a
    /// review replaces the entry of its paused part (the output repeats it).
    pub async fn record_output(&self, session_id: &str, text: &str, status: &str) -> Result<TranscriptEntry> {
        let last = self.transcript(session_id).await?.pop();
        let mut entry = match last {
            Some(e) if e.role == Speaker::Agent && e.status.as_deref() == Some("interrupted") => e,
            _ => self.entry(session_id, Speaker::Agent, "", None),
        };
        entry.text = text.to_owned();
        entry.status = Some(status.to_owned());
        let mut writes = vec![Write::Put { store: TRANSCRIPT, value: to_value(TRANSCRIPT, &entry)? }];
        if let Some(mut session) = self.get::<SessionInfo>(SESSIONS, session_id).await? {
            session.updated_at = platform::now_ms();
            writes.push(Write::Put { store: SESSIONS, value: to_value(SESSIONS, &session)? });
        }
        self.backend().write(writes).await?;
        Ok(entry)
    }

    fn entry(&self, session_id: &str, role: Speaker, text: &str, status: Option<String>) -> TranscriptEntry {
        let now = platform::now_ms();
        TranscriptEntry {
            id: revision_id(),
            session_id: session_id.to_owned(),
            role,
            text: text.to_owned(),
            status,
            created_at: now,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use futures_executor::block_on;

    use super::*;
    use crate::store::{ArtifactType, Lifecycle, MemoryBackend, Origin};

    #[test]
    fn titles_come_from_the_first_line() {
        assert_eq!(title_of("\n  京都の紅葉の見頃は？\n詳しく"), "京都の紅葉の見頃は？");
        let long = "word ".repeat(30);
        let title = title_of(&long);
        assert!(title.ends_with('…') && title.chars().count() <= TITLE_CHARS + 1, "{title}");
        assert_eq!(title_of("   "), "New session");
    }

    #[test]
    fn sessions_keep_their_transcript_and_go_whole() {
        let db = Db::new(Rc::new(MemoryBackend::new()));
        block_on(db.record_input("a", "first question")).unwrap();
        block_on(db.record_output("a", "answer one", "interrupted")).unwrap();
        // The resumed turn replaces its paused part.
        block_on(db.record_output("a", "answer one, finished", "completed")).unwrap();
        block_on(db.record_input("b", "another session")).unwrap();
        block_on(db.record_input("a", "second question")).unwrap();
        let sessions = block_on(db.sessions()).unwrap();
        assert_eq!(sessions.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["a", "b"], "most recent first");
        assert_eq!(sessions[0].title, "first question");
        let transcript = block_on(db.transcript("a")).unwrap();
        let shown: Vec<(Speaker, &str)> = transcript.iter().map(|e| (e.role, e.text.as_str())).collect();
        assert_eq!(
            shown,
            [
                (Speaker::Person, "first question"),
                (Speaker::Agent, "answer one, finished"),
                (Speaker::Person, "second question")
            ]
        );

        assert_eq!(block_on(db.rename_session("a", "  Kyoto  ")).unwrap().title, "Kyoto");
        assert_eq!(block_on(db.rename_session("a", " ")).unwrap_err().code(), "invalid_argument");
        assert_eq!(block_on(db.rename_session("zz", "x")).unwrap_err().code(), "not_found");

        block_on(db.create_artifact("a", ArtifactType::Text, "notes", "n", Lifecycle::Overwritable, Origin::Agent))
            .unwrap();
        block_on(db.delete_session("a")).unwrap();
        assert!(block_on(db.transcript("a")).unwrap().is_empty());
        assert!(block_on(db.artifacts("a")).unwrap().is_empty());
        assert_eq!(block_on(db.sessions()).unwrap().len(), 1);
    }
}
