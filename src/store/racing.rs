//! A backend for tests on which "another tab" writes at the worst moment:
//! just before this tab's next batch, after every read it made to prepare it.

use serde_json::Value;

use super::backend::{Backend, Guard, MemoryBackend, Write};
use super::error::Result;

/// A backend on which "another tab" writes just before this tab's next
/// batch, after every read this tab made to prepare it.
#[derive(Default)]
pub(crate) struct Racing {
    inner: MemoryBackend,
    next: std::cell::RefCell<Vec<Write>>,
}

impl Racing {
    /// Writes `writes` just before the next batch.
    pub(crate) fn before_next_batch(&self, writes: Vec<Write>) {
        *self.next.borrow_mut() = writes;
    }

    async fn race(&self) -> Result<()> {
        let writes = std::mem::take(&mut *self.next.borrow_mut());
        self.inner.write(writes).await
    }
}

#[async_trait::async_trait(?Send)]
impl Backend for Racing {
    async fn get(&self, store: &str, key: &str) -> Result<Option<Value>> {
        self.inner.get(store, key).await
    }
    async fn by_index_key(&self, store: &str, index: &str, key: &Value) -> Result<Vec<Value>> {
        self.inner.by_index_key(store, index, key).await
    }
    async fn all(&self, store: &str) -> Result<Vec<Value>> {
        self.inner.all(store).await
    }
    fn search_index(&self) -> Option<&std::rc::Rc<super::SearchIndex>> {
        self.inner.search_index()
    }
    async fn write(&self, writes: Vec<Write>) -> Result<()> {
        self.race().await?;
        self.inner.write(writes).await
    }
    async fn write_guarded(&self, guard: Guard<'_>, writes: Vec<Write>) -> Result<()> {
        self.race().await?;
        self.inner.write_guarded(guard, writes).await
    }
}
