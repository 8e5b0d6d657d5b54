//! Storage errors, typed so callers can tell a full disk from a refusal.

use crate::error::ErrorCode;

/// `Result` of the storage layer.
pub type Result<T> = std::result::Result<T, StoreError>;

/// Why a storage operation failed. Nothing is half-written in any case.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The browser's storage quota is exhausted.
    #[error("storage is full: {0}")]
    QuotaExceeded(String),
    /// The record does not exist.
    #[error("{store} has no record {id:?}")]
    NotFound { store: String, id: String },
    /// Several records match a loose reference.
    #[error("{reference:?} matches several artifacts: {}", candidates.join(", "))]
    Ambiguous { reference: String, candidates: Vec<String> },
    /// The record's lifecycle forbids the change.
    #[error("artifact {id:?} is {lifecycle}: {detail}")]
    Lifecycle { id: String, lifecycle: &'static str, detail: String },
    /// An edit did not apply (Adit's error message).
    #[error("the edit did not apply: {0}")]
    Edit(String),
    /// A record could not be (de)serialised.
    #[error("unreadable record in {store}: {detail}")]
    Codec { store: String, detail: String },
    /// A document or record is refused (wrong shape, a loop in a tree, an id
    /// of another project...); `field` says where. Nothing was written.
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// The record changed since the version a write or an undo was based
    /// on; nothing was written.
    #[error("{id:?} changed in the meantime: {detail}")]
    Conflict {
        id: String,
        detail: String,
        /// The record as it is now (a stale save's caller can offer it).
        current: Option<serde_json::Value>,
    },
    /// Another tab opened a newer version of the database: this connection
    /// was closed so that tab could upgrade; reload to use the new version.
    #[error("the app was updated in another tab: reload this page to go on (nothing was written)")]
    ReloadRequired,
    /// Opening needs a schema upgrade that another connection blocks: a tab
    /// with an older copy of the app (or another app on the database) keeps
    /// it open. Nothing was opened; close or reload that tab, then retry.
    #[error(
        "the database cannot be upgraded while another tab keeps it open: close or reload the other tabs of this \
         app (an older copy does not let go), then reload this page"
    )]
    Blocked,
    /// Any other failure of the database.
    #[error("database error: {0}")]
    Backend(String),
}

impl StoreError {
    /// Stable machine-readable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            StoreError::QuotaExceeded(_) => ErrorCode::QuotaExceeded,
            StoreError::NotFound { .. } => ErrorCode::NotFound,
            StoreError::Ambiguous { .. } => ErrorCode::Ambiguous,
            StoreError::Lifecycle { .. } => ErrorCode::Lifecycle,
            StoreError::Edit(_) => ErrorCode::EditFailed,
            StoreError::Codec { .. } => ErrorCode::Codec,
            StoreError::Invalid { .. } => ErrorCode::InvalidArgument,
            StoreError::Conflict { .. } => ErrorCode::Conflict,
            StoreError::ReloadRequired => ErrorCode::ReloadRequired,
            StoreError::Blocked => ErrorCode::Blocked,
            StoreError::Backend(_) => ErrorCode::Storage,
        }
    }
}
