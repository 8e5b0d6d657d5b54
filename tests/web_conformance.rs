//! The store conformance suite (`tests/conformance/`) on IndexedDB in Chromium.
#![cfg(all(target_arch = "wasm32", target_os = "unknown"))]

#[macro_use]
mod conformance;

use std::rc::Rc;

use async_trait::async_trait;
use atelier_agent::platform::random_id;
use atelier_agent::store::IdbBackend;
use conformance::Fixture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

struct Idb;

#[async_trait(?Send)]
impl Fixture for Idb {
    type B = IdbBackend;
    async fn open(&self) -> Rc<IdbBackend> {
        Rc::new(IdbBackend::open(&format!("conformance-{}", random_id())).await.unwrap())
    }
    async fn reload(&self, backend: Rc<IdbBackend>) -> Rc<IdbBackend> {
        let name = backend.name();
        backend.close();
        Rc::new(IdbBackend::open(&name).await.unwrap())
    }
    async fn other_tab(&self, backend: &Rc<IdbBackend>) -> Rc<IdbBackend> {
        Rc::new(IdbBackend::open(&backend.name()).await.unwrap())
    }
    fn fail_next_write(&self, _backend: &IdbBackend) {
        atelier_agent::store::idb_testing::fail_next_write_with("QuotaExceededError");
    }
    async fn pause(&self) {
        gloo_timers::future::TimeoutFuture::new(100).await;
    }
    async fn done(&self, backend: Rc<IdbBackend>) {
        let name = backend.name();
        backend.close();
        let _ = IdbBackend::delete(&name).await;
    }
    fn report(&self, line: &str) {
        wasm_bindgen_test::console_log!("{line}");
    }
}

macro_rules! browser {
    ($case:ident) => {
        #[wasm_bindgen_test]
        async fn $case() {
            conformance::$case(&Idb).await;
        }
    };
}

suite!(browser);
