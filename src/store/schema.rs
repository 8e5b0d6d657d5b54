//! The IndexedDB schema, versioned. Each version lists what it adds; opening
//! a database at an older version runs every later step in order, so a
//! browser that last ran any earlier release upgrades in one go.

use super::model::stores::*;

/// Database name.
pub const DB_NAME: &str = "atelier-agent";

/// One object store: its name, key path and indexes (name, key path(s)).
#[derive(Debug, Clone, Copy)]
pub struct StoreSpec {
    pub name: &'static str,
    pub key_path: &'static str,
    pub indexes: &'static [(&'static str, &'static [&'static str])],
}

/// Data a version derives from what earlier versions stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Migration {
    /// Mark every session with `sessionArtifacts` records (including records
    /// a Dexie app wrote) as stale in `artifactIndexStale`: the first read of
    /// a session's index adds the index fields (`_index`) to its records, so
    /// each appears in the `bySessionActive` index.
    MarkIndexStale,
}

impl Migration {
    /// The store a migration fills (skipped when a later version of the same
    /// upgrade removes that store).
    pub fn target(self) -> &'static str {
        match self {
            Migration::MarkIndexStale => INDEX_STALE,
        }
    }
}

/// What one schema version adds.
#[derive(Debug, Clone, Copy)]
pub struct Version {
    pub number: u32,
    pub stores: &'static [StoreSpec],
    /// Indexes added to stores created by earlier versions.
    pub indexes: &'static [(&'static str, &'static str, &'static [&'static str])],
    pub migrations: &'static [Migration],
    /// Stores this version deletes.
    pub removes: &'static [&'static str],
    /// Indexes this version deletes (before it adds its own, so an index can
    /// be redefined under its name).
    pub drops: &'static [(&'static str, &'static str)],
}

/// Every version, oldest first. Never edit a released entry: add one.
pub const VERSIONS: &[Version] = &[
    // 1: the session artifacts (the shape a Dexie app with `sessionArtifacts: 'id, sessionId'` writes).
    Version {
        number: 1,
        stores: &[StoreSpec { name: ARTIFACTS, key_path: "id", indexes: &[("sessionId", &["sessionId"])] }],
        indexes: &[],
        migrations: &[],
        removes: &[],
        drops: &[],
    },
    // 2: the person's projects and the agent's bookkeeping.
    Version {
        number: 2,
        stores: &[
            StoreSpec { name: PROJECTS, key_path: "id", indexes: &[] },
            StoreSpec { name: SECTIONS, key_path: "id", indexes: &[("projectId", &["projectId"])] },
            StoreSpec { name: PLOTS, key_path: "id", indexes: &[("projectId", &["projectId"])] },
            StoreSpec { name: MEMORIES, key_path: "id", indexes: &[("date", &["date"])] },
            StoreSpec { name: CHECKPOINTS, key_path: "id", indexes: &[("threadId", &["threadId"])] },
            StoreSpec { name: REVISIONS, key_path: "id", indexes: &[("origin", &["origin"])] },
            StoreSpec { name: SETTINGS, key_path: "key", indexes: &[] },
        ],
        indexes: &[],
        migrations: &[],
        removes: &[],
        drops: &[],
    },
    // 3: artifact index entries apart from the full contents.
    Version {
        number: 3,
        stores: &[StoreSpec {
            name: SNIPPETS,
            key_path: "id",
            indexes: &[("bySessionActive", &["sessionId", "active"])],
        }],
        indexes: &[],
        // Its snippet store was the v3 index; v4 replaced it by index keys
        // on the artifact records and removes it.
        migrations: &[],
        removes: &[],
        drops: &[],
    },
    // 4: the index entries move into the artifact store's own compound index
    // (its key carries the snippet, so a key cursor reads the artifact index
    // without loading a record, and a write updates one record); bulk writes
    // may leave a session's index fields to its first read (INDEX_STALE).
    Version {
        number: 4,
        stores: &[StoreSpec { name: INDEX_STALE, key_path: "sessionId", indexes: &[] }],
        indexes: &[(ARTIFACTS, "bySessionActive", ARTIFACT_INDEX_PATH_V4)],
        migrations: &[Migration::MarkIndexStale],
        removes: &[SNIPPETS],
        drops: &[],
    },
    // 5: sessions and their transcripts (what the conversation showed), so
    // any app on the package lists, renames and reopens sessions.
    Version {
        number: 5,
        stores: &[
            StoreSpec { name: SESSIONS, key_path: "id", indexes: &[] },
            StoreSpec { name: TRANSCRIPT, key_path: "id", indexes: &[("sessionId", &["sessionId"])] },
        ],
        indexes: &[],
        migrations: &[],
        removes: &[],
        drops: &[],
    },
    // 6: tool-call receipts (a call's effect and its receipt land in one
    // batch, so a resume after a crash never runs it twice), and a record's
    // revision history read through an index.
    Version {
        number: 6,
        stores: &[StoreSpec { name: RECEIPTS, key_path: "id", indexes: &[("sessionId", &["sessionId"])] }],
        indexes: &[(REVISIONS, "recordId", &["recordId"])],
        migrations: &[],
        removes: &[],
        drops: &[],
    },
    // 7: large strings of checkpointed state, stored once per session and
    // referenced by the checkpoints (see `store::blobs`).
    Version {
        number: 7,
        stores: &[StoreSpec { name: BLOBS, key_path: "id", indexes: &[("threadId", &["threadId"])] }],
        indexes: &[],
        migrations: &[],
        removes: &[],
        drops: &[],
    },
    // 8: the artifact index's keys carry each artifact's lifecycle (the
    // injected index shows it): the index is redefined and every session is
    // re-indexed on its first read.
    Version {
        number: 8,
        stores: &[],
        indexes: &[(ARTIFACTS, "bySessionActive", ARTIFACT_INDEX_PATH)],
        migrations: &[Migration::MarkIndexStale],
        removes: &[],
        drops: &[(ARTIFACTS, "bySessionActive")],
    },
    // 9: search: each searched record's word segmentation (what the
    // browser's segmenter made of its Japanese), keyed `<store>/<id>` and
    // checked against a fingerprint of the text, so a page load reindexes
    // without segmenting again. Existing records are segmented in the
    // background after the upgrade (see `store::search`).
    Version {
        number: 9,
        stores: &[StoreSpec { name: SEGMENTS, key_path: "key", indexes: &[] }],
        indexes: &[],
        migrations: &[],
        removes: &[],
        drops: &[],
    },
    // 10: the person's grants ("approve for this session"), keyed
    // `<sessionId>/<tool>` (see `store::grants`).
    Version {
        number: 10,
        stores: &[StoreSpec { name: GRANTS, key_path: "id", indexes: &[("sessionId", &["sessionId"])] }],
        indexes: &[],
        migrations: &[],
        removes: &[],
        drops: &[],
    },
];

/// Key path of the artifact store's `bySessionActive` index: its keys are
/// whole [`ArtifactSnippet`](super::model::ArtifactSnippet)s of active
/// artifacts, in id order within a session (databases indexed before
/// inactive artifacts were left out may still hold `active` 0 keys, which no
/// read asks for).
pub const ARTIFACT_INDEX_PATH: &[&str] =
    &["sessionId", "_index.active", "id", "title", "_index.snippet", "_index.length", "createdAt", "_index.lifecycle"];

/// The key path v4 defined (v8 added the lifecycle).
pub const ARTIFACT_INDEX_PATH_V4: &[&str] =
    &["sessionId", "_index.active", "id", "title", "_index.snippet", "_index.length", "createdAt"];

/// The current version.
pub fn current_version() -> u32 {
    VERSIONS.last().map_or(1, |v| v.number)
}

/// The key path of a store.
pub fn key_path(store: &str) -> &'static str {
    VERSIONS.iter().flat_map(|v| v.stores).find(|s| s.name == store).map_or("id", |s| s.key_path)
}

/// The key path(s) of `index` on `store` (its latest definition).
pub fn index_path(store: &str, index: &str) -> Option<&'static [&'static str]> {
    let mut found = None;
    for version in VERSIONS {
        for spec in version.stores.iter().filter(|s| s.name == store) {
            if let Some((_, path)) = spec.indexes.iter().find(|(name, _)| *name == index) {
                found = Some(*path);
            }
        }
        if let Some((_, _, path)) = version.indexes.iter().find(|(s, name, _)| *s == store && *name == index) {
            found = Some(*path);
        }
    }
    found
}
