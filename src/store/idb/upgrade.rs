//! Opening the database and running the schema versions it lacks, inside
//! `upgradeneeded` (hand-written: see `mod.rs` for why not rexie's builder).

use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{IdbDatabase, IdbObjectStore, IdbObjectStoreParameters, IdbTransaction};

use super::{mark_sessions_stale, open_database, settle};
use crate::store::error::Result;
use crate::store::model::stores::{ARTIFACTS, INDEX_STALE};
use crate::store::schema::{Migration, VERSIONS};

/// IndexedDB version of schema version `n`: Dexie stores its version `n` as
/// `n * 10`, so we do too; a database a Dexie app created at version 1 then
/// upgrades cleanly to ours.
pub const IDB_VERSION_FACTOR: u32 = 10;

/// Opens `name` at schema `version`, upgrading it first when it is older.
/// How long an upgrade waits for other connections to close before the
/// open fails with `blocked` (this package's own tabs close at once).
pub const BLOCKED_MS: u32 = 3000;

pub(super) async fn open(name: &str, version: u32) -> Result<IdbDatabase> {
    let upgrade = Closure::<dyn FnMut(IdbDatabase, IdbTransaction, f64, f64) -> std::result::Result<(), JsValue>>::new(
        |db: IdbDatabase, tx: IdbTransaction, old: f64, new: f64| {
            run(&db, &tx, old as u32 / IDB_VERSION_FACTOR, new as u32 / IDB_VERSION_FACTOR)
        },
    );
    let opened =
        settle(open_database(name, version * IDB_VERSION_FACTOR, upgrade.as_ref().unchecked_ref(), BLOCKED_MS)).await;
    drop(upgrade);
    Ok(opened?.unchecked_into())
}

/// Creates what every version after `old` up to `new` adds; moves data where
/// a version says so; removes what it drops. A thrown error aborts the
/// upgrade (the database keeps its old schema).
fn run(db: &IdbDatabase, tx: &IdbTransaction, old: u32, new: u32) -> std::result::Result<(), JsValue> {
    for version in VERSIONS.iter().filter(|v| v.number > old && v.number <= new) {
        for spec in version.stores {
            let params = IdbObjectStoreParameters::new();
            params.set_key_path(&JsValue::from_str(spec.key_path));
            let store = db.create_object_store_with_optional_parameters(spec.name, &params)?;
            for (name, path) in spec.indexes {
                create_index(&store, name, path)?;
            }
        }
        for (store, name) in version.drops {
            let store = tx.object_store(store)?;
            if store.index_names().contains(name) {
                store.delete_index(name)?;
            }
        }
        for (store, name, path) in version.indexes {
            create_index(&tx.object_store(store)?, name, path)?;
        }
        for migration in version.migrations {
            // A store a later version of this same upgrade removes is not filled.
            let removed_later = VERSIONS
                .iter()
                .any(|v| v.number > version.number && v.number <= new && v.removes.contains(&migration.target()));
            if removed_later {
                continue;
            }
            match migration {
                // Index fields are computed in one place (Rust, on the first
                // read of each session): the upgrade only marks sessions.
                Migration::MarkIndexStale => mark_sessions_stale(tx, ARTIFACTS, INDEX_STALE),
            }
        }
        for store in version.removes {
            if db.object_store_names().contains(store) {
                db.delete_object_store(store)?;
            }
        }
    }
    Ok(())
}

fn create_index(store: &IdbObjectStore, name: &str, path: &[&str]) -> std::result::Result<(), JsValue> {
    if store.index_names().contains(name) {
        return Ok(());
    }
    if let [single] = path {
        store.create_index_with_str(name, single)?;
    } else {
        let keys: js_sys::Array = path.iter().map(|p| JsValue::from_str(p)).collect();
        store.create_index_with_str_sequence(name, &keys)?;
    }
    Ok(())
}
