//! The store conformance suite (`tests/conformance/`) on the in-memory backend.
#![cfg(not(target_arch = "wasm32"))]

#[macro_use]
mod conformance;

use std::rc::Rc;

use async_trait::async_trait;
use atelier_agent::store::{MemoryBackend, StoreError};
use conformance::Fixture;

struct Memory;

#[async_trait(?Send)]
impl Fixture for Memory {
    type B = MemoryBackend;
    async fn open(&self) -> Rc<MemoryBackend> {
        Rc::new(MemoryBackend::new())
    }
    async fn reload(&self, backend: Rc<MemoryBackend>) -> Rc<MemoryBackend> {
        Rc::new(backend.reopen())
    }
    async fn other_tab(&self, backend: &Rc<MemoryBackend>) -> Rc<MemoryBackend> {
        Rc::new(backend.other_tab())
    }
    fn fail_next_write(&self, backend: &MemoryBackend) {
        backend.fail_next_write(StoreError::QuotaExceeded("simulated".into()));
    }
    async fn pause(&self) {}
    async fn done(&self, _backend: Rc<MemoryBackend>) {}
    fn report(&self, line: &str) {
        println!("{line}");
    }
}

macro_rules! native {
    ($case:ident) => {
        #[test]
        fn $case() {
            futures_executor::block_on(conformance::$case(&Memory));
        }
    };
}

suite!(native);
