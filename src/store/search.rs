//! The search index the store keeps current: every backend owns one, and
//! its one write path tells it what each committed batch changed, so no
//! write is missed (the person's saves, the agent's edits, restores and
//! undo, imports, deletes and cascades; another tab's writes arrive as the
//! keys its announcement names, and are read again).
//!
//! The index itself lives in memory ([`crate::search::Index`]) and is made
//! from the records. What is costly to make — cutting Japanese into words,
//! about 0.15 µs a character in the browser's segmenter, 2 s for 20 M
//! characters — is done once per text and kept in the `searchSegments`
//! store (schema v9), keyed by record and checked against a fingerprint of
//! the text, so a page load reads it back instead of segmenting again, and
//! an entry that does not match its record (written by an older version,
//! corrupted, left by a crash) is simply made again. A record's write never
//! waits for the segmenter: its old words leave the index at once, its text
//! waits in a queue that a background task works through in slices of at
//! most [`SLICE_MS`] once writes have paused, and every search first works
//! the queue off (within [`SEARCH_WAIT_MS`]), so a search after a write
//! finds the new text and never the old. A database upgraded from before
//! v9 has no segmentations: they are made in the background the same way,
//! and a search meanwhile answers from what is indexed and says so.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use serde_json::{json, Value};

use super::backend::{Backend, Write};
use super::error::{Result, StoreError};
use super::model::stores::{ARTIFACTS, MEMORIES, PLOTS, SECTIONS, SEGMENTS, SESSIONS, TRANSCRIPT};
use crate::platform;
use crate::search::index::Keys;
use crate::search::text::{dictionary_runs, Breaks};
use crate::search::{self, Doc, Hit, Index, Kind, Query, SearchOptions};

/// The stores whose records are searched, in the order a load reads them.
pub const SEARCHED: [&str; 5] = [SECTIONS, PLOTS, MEMORIES, ARTIFACTS, TRANSCRIPT];

/// Longest stretch of work before the page gets the event loop back.
pub const SLICE_MS: f64 = 40.0;
/// How long a search waits for queued work before it answers from what is indexed.
pub const SEARCH_WAIT_MS: f64 = 1000.0;
/// Background work starts once no write came for this long (started at
/// once, a large import's indexing measured slower: its reads of the same
/// stores queue behind the import's transactions and the import behind them).
const IDLE_MS: f64 = 50.0;
/// Run text the segmenter gets in one call (about 5 ms of its time).
const SEGMENT_CHUNK: usize = 96 * 1024;
/// Segmentations written to storage together.
const SAVE_BATCH: usize = 64;

/// The key of a record in the index and in `searchSegments`.
pub fn doc_key(store: &str, id: &str) -> String {
    format!("{store}/{id}")
}

/// What of a record is searched (`None`: not a searched store, or no id).
pub fn doc_of(store: &str, record: &Value) -> Option<Doc> {
    let text = |field: &str| record.get(field).and_then(Value::as_str);
    let id = text("id")?;
    // The kind, and the fields of its title and text (a memory's title is
    // its date and tags; a transcript entry shows its session's title,
    // which is not its text).
    let (kind, title_field, body_field) = match store {
        SECTIONS => (Kind::Manuscript, "title", "content"),
        PLOTS => (Kind::Plot, "title", "summary"),
        ARTIFACTS => (Kind::Artifact, "title", "content"),
        MEMORIES => (Kind::Memory, "date", "summary"),
        TRANSCRIPT => (Kind::Transcript, "", "text"),
        _ => return None,
    };
    let mut title = text(title_field).filter(|_| !title_field.is_empty()).unwrap_or("").to_owned();
    let body = text(body_field).unwrap_or("").to_owned();
    let (mut project, mut session) = (None, None);
    match kind {
        Kind::Manuscript | Kind::Plot => project = text("projectId"),
        Kind::Artifact => {
            session = text("sessionId");
            project = session.and_then(|s| s.strip_prefix("continuity:"));
        }
        Kind::Memory => {
            let tags = record.get("tags").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str);
            for (i, tag) in tags.enumerate() {
                title.push_str(if i == 0 { " · " } else { ", " });
                title.push_str(tag);
            }
        }
        Kind::Transcript => session = text("sessionId"),
    }
    let hash = search::text_hash(&title, &body);
    Some(Doc {
        key: doc_key(store, id),
        kind,
        id: id.to_owned(),
        title,
        body,
        project: project.map(str::to_owned),
        session: session.map(str::to_owned),
        hash,
    })
}

/// What a committed batch changes in the index.
pub(crate) enum Change {
    Put(Doc),
    Delete(String),
    SessionTitle(String, Option<String>),
}

impl Change {
    fn key(&self) -> Option<&str> {
        match self {
            Change::Put(doc) => Some(&doc.key),
            Change::Delete(key) => Some(key),
            Change::SessionTitle(..) => None,
        }
    }
}

/// The changes `writes` make to the index once committed, and the writes
/// the batch adds: a deleted record's stored segmentation goes with it, in
/// the same transaction.
pub(crate) fn plan(writes: &[Write]) -> (Vec<Change>, Vec<Write>) {
    let mut changes = Vec::new();
    let mut also = Vec::new();
    for write in writes {
        match write {
            Write::Put { store: SESSIONS, value } => {
                if let Some(id) = value.get("id").and_then(Value::as_str) {
                    let title = value.get("title").and_then(Value::as_str).map(str::to_owned);
                    changes.push(Change::SessionTitle(id.to_owned(), title));
                }
            }
            Write::Delete { store: SESSIONS, key } => changes.push(Change::SessionTitle(key.clone(), None)),
            Write::Put { store, value } => changes.extend(doc_of(store, value).map(Change::Put)),
            Write::Delete { store, key } if SEARCHED.contains(store) => {
                let key = doc_key(store, key);
                also.push(Write::Delete { store: SEGMENTS, key: key.clone() });
                changes.push(Change::Delete(key));
            }
            Write::Delete { .. } => {}
        }
    }
    (changes, also)
}

/// The keys of the searched records a batch changed (other tabs read them again).
pub(crate) fn changed_keys(changes: &[Change]) -> Vec<String> {
    changes.iter().filter_map(Change::key).map(str::to_owned).collect()
}

/// Where a search index stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchStatus {
    /// Records searchable now.
    pub indexed: usize,
    /// Records known to wait for indexing (more may wait while `complete` is false).
    pub pending: usize,
    /// Every stored record is searchable.
    pub complete: bool,
    /// Texts this connection segmented since it opened (the rest came with their stored segmentation).
    pub segmented: usize,
    /// The longest stretch of indexing work without yielding to the page, in ms.
    pub longest_slice_ms: f64,
}

/// A search's hits, and whether they cover everything.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchAnswer {
    pub hits: Vec<Hit>,
    pub status: SearchStatus,
}

/// A record waiting for the segmenter (resumable: a long text takes several calls).
struct Pending {
    doc: Doc,
    runs: Option<String>,
    breaks: Breaks,
    done: usize,
}

/// Documents waiting, in the order written; a newer write of a key takes its place.
#[derive(Default)]
struct Queue {
    items: Vec<Option<Pending>>,
    at: Keys,
    head: usize,
}

impl Queue {
    fn push(&mut self, doc: Doc) {
        let pending = Pending { doc, runs: None, breaks: Breaks::default(), done: 0 };
        match self.at.get(pending.doc.key.as_str()) {
            Some(&i) => self.items[i as usize] = Some(pending),
            None => {
                self.at.insert(pending.doc.key.as_str().into(), self.items.len() as u32);
                self.items.push(Some(pending));
            }
        }
    }

    fn remove(&mut self, key: &str) {
        if let Some(i) = self.at.remove(key) {
            self.items[i as usize] = None;
        }
    }

    fn contains(&self, key: &str) -> bool {
        self.at.contains_key(key)
    }

    fn len(&self) -> usize {
        self.at.len()
    }

    /// The oldest waiting document.
    fn front(&mut self) -> Option<&mut Pending> {
        while self.head < self.items.len() && self.items[self.head].is_none() {
            self.head += 1;
        }
        if self.head == self.items.len() {
            self.items.clear();
            self.head = 0;
            return None;
        }
        self.items[self.head].as_mut()
    }

    fn pop_front(&mut self) -> Option<Pending> {
        self.front()?;
        let done = self.items[self.head].take()?;
        self.at.remove(done.doc.key.as_str());
        Some(done)
    }
}

/// The stores a load reads, in order: session titles, stored
/// segmentations, then the searched records.
const LOAD: [&str; 7] = [SESSIONS, SEGMENTS, SECTIONS, PLOTS, MEMORIES, ARTIFACTS, TRANSCRIPT];

/// How far the index has read storage: the store of [`LOAD`] it is at and
/// the last key read there.
#[derive(Debug, Clone, Default, PartialEq)]
struct Load {
    at: usize,
    after: Option<String>,
}

impl Load {
    fn done(&self) -> bool {
        self.at == LOAD.len()
    }
}

/// One read a slice makes: `ids` of `store` again (another tab wrote them),
/// or a page of `count` records after `after`.
struct Read {
    store: &'static str,
    after: Option<String>,
    count: usize,
    ids: Vec<String>,
}

#[derive(Default)]
struct Live {
    index: Index,
    load: Load,
    /// Stored segmentations read while loading (fingerprint, breaks), by
    /// key while not yet matched to a record.
    stored: Vec<(u64, String)>,
    stored_at: Keys,
    queue: Queue,
    /// Keys another tab changed, to read again.
    reread: Vec<String>,
    /// Segmentations made and not yet stored.
    unsaved: Vec<Value>,
    /// Session titles (what a transcript hit shows), by session id.
    titles: Vec<String>,
    title_at: Keys,
    last_write: f64,
    /// Records read per page (shrinks when pages are large).
    page: usize,
}

/// The search index of one backend (see the module documentation).
#[derive(Default)]
pub struct SearchIndex {
    live: RefCell<Live>,
    /// A slice is running (one at a time: the background task or a search).
    busy: Cell<bool>,
    /// The background task is spawned.
    worker: Cell<bool>,
    backend: RefCell<Option<Weak<dyn Backend>>>,
    segmented: Cell<usize>,
    longest_slice: Cell<f64>,
    /// How long a search waits for queued work ([`SEARCH_WAIT_MS`] unless set).
    wait_ms: Cell<Option<f64>>,
}

impl SearchIndex {
    pub fn new() -> SearchIndex {
        SearchIndex::default()
    }

    /// Tells the index which backend it belongs to (for its background
    /// work) and starts loading it.
    pub fn attach(&self, backend: Weak<dyn Backend>) {
        *self.backend.borrow_mut() = Some(backend);
        self.kick();
    }

    /// Where the index stands.
    pub fn status(&self) -> SearchStatus {
        let live = self.live.borrow();
        let pending = live.queue.len() + live.reread.len();
        SearchStatus {
            indexed: live.index.len(),
            pending,
            complete: live.load.done() && pending == 0,
            segmented: self.segmented.get(),
            longest_slice_ms: self.longest_slice.get(),
        }
    }

    /// How long a search waits for queued work before answering from what
    /// is indexed (tests make it 0 to see a partial answer).
    pub fn set_search_wait(&self, ms: f64) {
        self.wait_ms.set(Some(ms));
    }

    fn has_work(&self) -> bool {
        let live = self.live.borrow();
        !live.load.done() || live.queue.len() > 0 || !live.reread.is_empty() || !live.unsaved.is_empty()
    }

    /// Applies a committed batch of this tab.
    pub(crate) fn apply(&self, changes: Vec<Change>) {
        if changes.is_empty() {
            return;
        }
        {
            let mut live = self.live.borrow_mut();
            for change in changes {
                live.change(change);
            }
            live.last_write = platform::now_ms();
        }
        self.kick();
    }

    /// Another tab committed writes to these records: read them again.
    pub fn changed_elsewhere(&self, keys: Vec<String>) {
        if keys.is_empty() {
            return;
        }
        self.live.borrow_mut().reread.extend(keys);
        self.kick();
    }

    /// Starts the background task, where there is an event loop to run it.
    fn kick(&self) {
        if self.worker.get() || !self.has_work() {
            return;
        }
        let Some(backend) = self.backend.borrow().as_ref().and_then(Weak::upgrade) else { return };
        self.worker.set(platform::spawn(background(backend)));
    }

    /// Works until nothing is left or `wait_ms` has passed, a slice at a
    /// time (yielding between them).
    pub async fn catch_up(&self, backend: &dyn Backend, wait_ms: f64) -> Result<()> {
        let deadline = platform::now_ms() + wait_ms;
        while self.has_work() && platform::now_ms() < deadline {
            self.step(backend).await?;
        }
        Ok(())
    }

    /// One slice, then the page gets the event loop back (or, while the
    /// other worker's slice runs, a short wait).
    async fn step(&self, backend: &dyn Backend) -> Result<()> {
        if self.busy.replace(true) {
            platform::sleep(std::time::Duration::from_millis(2)).await;
            return Ok(());
        }
        let done = self.slice(backend).await;
        self.busy.set(false);
        platform::yield_now().await;
        done
    }

    /// Searches (after working off what waits, within [`SEARCH_WAIT_MS`]).
    pub async fn search(&self, backend: &dyn Backend, query: &str, options: &SearchOptions) -> Result<SearchAnswer> {
        let invalid = |e: search::SearchError| StoreError::Invalid { field: "query".into(), message: e.to_string() };
        let query = Query::parse(query).map_err(invalid)?;
        let scope =
            options.scope().map_err(|e| StoreError::Invalid { field: "scope".into(), message: e.to_string() })?;
        self.catch_up(backend, self.wait_ms.get().unwrap_or(SEARCH_WAIT_MS)).await?;
        let live = self.live.borrow();
        let mut hits = search::run(&live.index, &query, &scope, options.limit(), options.meaning.as_ref());
        for hit in hits.iter_mut().filter(|h| h.kind == Kind::Transcript) {
            if let Some(at) = hit.session_id.as_deref().and_then(|s| live.title_at.get(s)) {
                hit.title = live.titles[*at as usize].clone();
            }
        }
        drop(live);
        Ok(SearchAnswer { hits, status: self.status() })
    }

    /// How many times a document was indexed or dropped, once every stored
    /// record is indexed (before, the meaning vectors wait): what tells the
    /// embedder whether anything changed since it last looked.
    pub fn edits(&self) -> Option<u64> {
        self.status().complete.then(|| self.live.borrow().index.edits())
    }

    /// The indexed documents' keys and fingerprints.
    pub fn fingerprints(&self) -> (Vec<String>, Vec<f64>) {
        self.live.borrow().index.fingerprints().map(|(key, hash)| (key.to_owned(), hash as f64)).unzip()
    }

    /// The texts of a document's passages, as embedded (see `search::meaning`).
    pub fn passage_texts(&self, key: &str) -> Option<Vec<String>> {
        self.live.borrow().index.passage_texts(key)
    }

    /// One stretch of work: one read (records another tab changed, else the
    /// next page of the load), or the queue for at most [`SLICE_MS`]; then
    /// one write of what is ready to store. Everything between the two
    /// awaits is synchronous and timed.
    async fn slice(&self, backend: &dyn Backend) -> Result<()> {
        let read = self.live.borrow_mut().next_read();
        let started = match read {
            Some(Read { store, after: None, count: 0, ids }) => {
                let found = backend.get_many(store, &ids).await?;
                let started = platform::now_ms();
                self.live.borrow_mut().read_back(store, &ids, found);
                started
            }
            Some(Read { store, after, count, .. }) => {
                let page = backend.page(store, after.as_deref(), count).await?;
                let started = platform::now_ms();
                self.live.borrow_mut().paged(store, page);
                started
            }
            None => {
                let started = platform::now_ms();
                let mut live = self.live.borrow_mut();
                let mut segmented = 0;
                while platform::now_ms() - started < SLICE_MS && live.segment_next(&mut segmented) {}
                self.segmented.set(self.segmented.get() + segmented);
                started
            }
        };
        self.longest_slice.set(self.longest_slice.get().max(platform::now_ms() - started));
        let writes = self.live.borrow_mut().writes_due();
        if !writes.is_empty() {
            // A segmentation that could not be stored (a full disk) is made
            // again on the next load; the index has it either way.
            if let Err(StoreError::ReloadRequired) = backend.write(writes).await {
                return Err(StoreError::ReloadRequired);
            }
        }
        Ok(())
    }

    /// Drives every waiting piece of work to its end (tests, benchmarks,
    /// and anyone who wants the index whole before going on).
    pub async fn settle(&self, backend: &dyn Backend) -> Result<SearchStatus> {
        self.catch_up(backend, f64::INFINITY).await?;
        Ok(self.status())
    }
}

impl Live {
    /// What the next slice reads, if anything.
    fn next_read(&mut self) -> Option<Read> {
        if let Some(first) = self.reread.pop() {
            // Keys of one store, read together.
            let (store, _) = first.split_once('/')?;
            let store = *LOAD.iter().find(|s| **s == store)?;
            let mut ids = Vec::new();
            self.reread.push(first);
            self.reread.retain(|key| match key.split_once('/') {
                Some((s, id)) if s == store && ids.len() < SAVE_BATCH => {
                    ids.push(id.to_owned());
                    false
                }
                _ => true,
            });
            return Some(Read { store, after: None, count: 0, ids });
        }
        if self.load.done() {
            return None;
        }
        self.page = if self.page == 0 { 64 } else { self.page.clamp(1, 256) };
        Some(Read { store: LOAD[self.load.at], after: self.load.after.clone(), count: self.page, ids: Vec::new() })
    }

    /// Records another tab wrote, read again (`None`: deleted there).
    fn read_back(&mut self, store: &str, ids: &[String], found: Vec<Option<Value>>) {
        for (id, record) in ids.iter().zip(found) {
            match record.as_ref().and_then(|r| doc_of(store, r)) {
                Some(doc) => self.change(Change::Put(doc)),
                None => self.change(Change::Delete(doc_key(store, id))),
            }
        }
    }

    /// A page the load read.
    fn paged(&mut self, store: &str, page: Vec<Value>) {
        let key_field = if store == SEGMENTS { "key" } else { "id" };
        let last = page.last().and_then(|v| v.get(key_field)?.as_str().map(str::to_owned));
        let mut bytes = 0;
        for record in &page {
            let text = |f: &str| record.get(f).and_then(Value::as_str);
            match store {
                SESSIONS => {
                    if let (Some(id), Some(title)) = (text("id"), text("title")) {
                        self.set_title(id, Some(title.to_owned()));
                    }
                }
                SEGMENTS => {
                    if let (Some(key), Some(hash), Some(breaks)) =
                        (text("key"), record.get("hash").and_then(Value::as_f64), text("breaks"))
                    {
                        self.stored_at.insert(key.into(), self.stored.len() as u32);
                        self.stored.push((hash as u64, breaks.to_owned()));
                    }
                }
                _ => {
                    if let Some(doc) = doc_of(store, record) {
                        bytes += doc.body.len();
                        self.loaded(doc);
                    }
                }
            }
        }
        // Pages of about a megabyte (an artifact can be a whole web page).
        self.page = if bytes > 1 << 20 { self.page / 4 } else { self.page * 2 };
        match last {
            Some(last) => self.load.after = Some(last),
            None => self.load = Load { at: self.load.at + 1, after: None },
        }
    }

    /// What is ready to be stored: made segmentations (in batches, or the
    /// rest once nothing waits) and, once the load is done, the deletion of
    /// segmentations whose record is gone (another app deleted it).
    fn writes_due(&mut self) -> Vec<Write> {
        let idle = self.load.done() && self.queue.len() == 0;
        let mut writes = Vec::new();
        if self.unsaved.len() >= SAVE_BATCH || idle {
            writes.extend(self.unsaved.drain(..).map(|value| Write::Put { store: SEGMENTS, value }));
        }
        if self.load.done() {
            writes.extend(self.stored_at.drain().map(|(key, _)| Write::Delete { store: SEGMENTS, key: key.into() }));
            self.stored = Vec::new();
        }
        writes
    }

    fn change(&mut self, change: Change) {
        if let Some(key) = change.key() {
            // A segmentation made for the text this replaces must not be stored after it.
            self.unsaved.retain(|entry| entry.get("key").and_then(Value::as_str) != Some(key));
        }
        match change {
            Change::Put(doc) => {
                if self.index.hash_of(&doc.key) == Some(doc.hash) {
                    self.queue.remove(&doc.key);
                    return;
                }
                // The old words go at once; the new text waits its turn.
                self.index.remove(&doc.key);
                self.queue.push(doc);
            }
            Change::Delete(key) => {
                self.index.remove(&key);
                self.queue.remove(&key);
            }
            Change::SessionTitle(id, title) => self.set_title(&id, title),
        }
    }

    fn set_title(&mut self, session: &str, title: Option<String>) {
        let title = title.unwrap_or_default();
        match self.title_at.get(session) {
            Some(&at) => self.titles[at as usize] = title,
            None => {
                self.title_at.insert(session.into(), self.titles.len() as u32);
                self.titles.push(title);
            }
        }
    }

    /// A record read by the load: indexed from its stored segmentation when
    /// that matches its text, else queued.
    fn loaded(&mut self, doc: Doc) {
        let stored = self.stored_at.remove(doc.key.as_str()).map(|at| std::mem::take(&mut self.stored[at as usize]));
        if self.index.hash_of(&doc.key) == Some(doc.hash) || self.queue.contains(&doc.key) {
            return; // a write of this tab (or a read again) got here first
        }
        let breaks = stored.filter(|(hash, _)| *hash == doc.hash).and_then(|(_, text)| Breaks::decode(&text));
        let runs = runs_of(&doc);
        match breaks {
            Some(breaks) if breaks.len() == runs.chars().filter(|c| *c != '\n').count() => self.index.add(doc, &breaks),
            // No segmentation, an outdated one or a corrupted one: made again.
            _ if runs.is_empty() => self.index.add(doc, &Breaks::default()),
            _ => self.queue.push(doc),
        }
    }

    /// Segments (part of) the oldest waiting document; indexes it once it
    /// is whole. False when nothing waits.
    fn segment_next(&mut self, segmented: &mut usize) -> bool {
        let Some(pending) = self.queue.front() else { return false };
        let runs = pending.runs.get_or_insert_with(|| runs_of(&pending.doc));
        if runs.is_empty() {
            // Nothing for the segmenter (English, code): nothing to store either.
            if let Some(done) = self.queue.pop_front() {
                self.index.add(done.doc, &Breaks::default());
            }
            return true;
        }
        if pending.done < runs.len() {
            // Up to a chunk, ending after a run where one ends (else on a char).
            let limit = (pending.done + SEGMENT_CHUNK).min(runs.len());
            let mut end = runs.as_bytes()[pending.done..limit]
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(limit, |i| pending.done + i + 1);
            while !runs.is_char_boundary(end) {
                end += 1;
            }
            pending.breaks.extend(&Breaks::segment(&runs[pending.done..end]));
            pending.done = end;
            return true;
        }
        let Some(done) = self.queue.pop_front() else { return false };
        *segmented += 1;
        self.unsaved.push(json!({ "key": done.doc.key, "hash": done.doc.hash as f64, "breaks": done.breaks.encode() }));
        self.index.add(done.doc, &done.breaks);
        true
    }
}

fn runs_of(doc: &Doc) -> String {
    let mut runs = String::new();
    dictionary_runs(&doc.title, &mut runs);
    dictionary_runs(&doc.body, &mut runs);
    runs
}

/// The background task: waits until writes pause, then works a slice at a
/// time until nothing is left (or the backend is gone or closed).
async fn background(backend: Rc<dyn Backend>) {
    let Some(search) = backend.search_index().cloned() else { return };
    loop {
        let quiet = platform::now_ms() - search.live.borrow().last_write;
        if quiet < IDLE_MS {
            platform::sleep(std::time::Duration::from_millis((IDLE_MS - quiet) as u64 + 1)).await;
            continue;
        }
        if !search.has_work() || search.step(&*backend).await.is_err() {
            break;
        }
    }
    search.worker.set(false);
}
