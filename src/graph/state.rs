//! Graph state: a struct whose fields each have a reducer. Nodes return a
//! partial update; the engine applies it field by field (`append` fields
//! extend, `set` fields overwrite when present).

use serde::de::DeserializeOwned;
use serde::Serialize;

/// The state a graph threads through its nodes.
pub trait GraphState: Clone + Default + Serialize + DeserializeOwned + 'static {
    /// A partial update a node returns (every field optional or appendable).
    type Update: Default + Clone + Serialize + DeserializeOwned + 'static;
    /// What its nodes report while they run (see `NodeContext::emit`).
    type Event: 'static;

    /// Applies `update` with each field's reducer.
    fn apply(&mut self, update: Self::Update);
}

/// Declares a state struct, its update struct and the reducers.
///
/// ```
/// use atelier_agent::graph_state;
/// graph_state! {
///     /// A counter with a log.
///     pub struct Counter, update CounterUpdate {
///         append log: Vec<String>,
///         set count: u32,
///     }
/// }
/// use atelier_agent::graph::GraphState;
/// let mut s = Counter::default();
/// s.apply(CounterUpdate { log: vec!["a".into()], count: Some(2) });
/// s.apply(CounterUpdate { log: vec!["b".into()], ..Default::default() });
/// assert_eq!((s.log.len(), s.count), (2, 2));
/// ```
#[macro_export]
macro_rules! graph_state {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident, update $update:ident $(, events $event:ty)? {
            $( $(#[$fmeta:meta])* $kind:ident $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        $vis struct $name {
            $( $(#[$fmeta])* #[serde(default)] pub $field: $ty, )*
        }

        #[doc = concat!("A partial update of [`", stringify!($name), "`].")]
        #[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        $vis struct $update {
            $( #[serde(default)] pub $field: $crate::__graph_update_ty!($kind $ty), )*
        }

        impl $crate::graph::GraphState for $name {
            type Update = $update;
            type Event = $crate::__graph_event_ty!($($event)?);

            fn apply(&mut self, update: $update) {
                $( $crate::__graph_apply!($kind self.$field, update.$field); )*
            }
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __graph_event_ty {
    () => {
        ()
    };
    ($event:ty) => {
        $event
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __graph_update_ty {
    (append $ty:ty) => { $ty };
    (set $ty:ty) => { Option<$ty> };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __graph_apply {
    (append $target:expr, $value:expr) => {
        $target.extend($value)
    };
    (set $target:expr, $value:expr) => {
        if let Some(v) = $value {
            $target = v;
        }
    };
}
