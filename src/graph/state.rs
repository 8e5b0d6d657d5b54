//! Graph state: a struct whose fields each have a reducer. Nodes return a
//! partial update; the engine applies it field by field (`append` fields
//! extend, `set` fields overwrite when present).

use serde::de::DeserializeOwned;
use serde::Serialize;

/// The state a graph threads through its nodes.
pub trait GraphState: Clone + Default + Serialize + DeserializeOwned + 'static {
    /// A partial update a node returns (every field optional or appendable).
    type Update: Default + Clone + 'static;
    /// What its nodes report while they run (see `NodeContext::emit`).
    type Event: 'static;

    /// Applies `update` with each field's reducer.
    fn apply(&mut self, update: Self::Update);

    /// The state as serialised (a checkpoint's `state`), or what is wrong.
    fn decode(value: &serde_json::Value) -> Result<Self, String> {
        crate::json::from_value(value.clone()).map_err(|e| e.to_string())
    }
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
///
/// `decoded by hand` after the events leaves out the derived decoder of
/// the state: the state then implements `Deserialize` itself (the agent's
/// does, to keep its tree's derived decoders out of the package).
#[macro_export]
macro_rules! graph_state {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident, update $update:ident $(, events $event:ty)? {
            $( $(#[$fmeta:meta])* $kind:ident $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $crate::graph_state! {
            @derive [serde::Deserialize] derived
            $(#[$meta])*
            $vis struct $name, update $update $(, events $event)? {
                $( $(#[$fmeta])* $kind $field : $ty ),*
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident, update $update:ident $(, events $event:ty)?, decoded by hand {
            $( $(#[$fmeta:meta])* $kind:ident $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $crate::graph_state! {
            @derive [] by_hand
            $(#[$meta])*
            $vis struct $name, update $update $(, events $event)? {
                $( $(#[$fmeta])* $kind $field : $ty ),*
            }
        }
    };
    (
        @derive [$($decode:path)?] $how:ident
        $(#[$meta:meta])*
        $vis:vis struct $name:ident, update $update:ident $(, events $event:ty)? {
            $( $(#[$fmeta:meta])* $kind:ident $field:ident : $ty:ty ),*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, serde::Serialize $(, $decode)?)]
        #[serde(rename_all = "camelCase")]
        $vis struct $name {
            $( $(#[$fmeta])* #[serde(default)] pub $field: $ty, )*
        }

        #[doc = concat!("A partial update of [`", stringify!($name), "`].")]
        #[derive(Debug, Clone, Default, PartialEq)]
        $vis struct $update {
            $( pub $field: $crate::__graph_update_ty!($kind $ty), )*
        }

        impl $crate::graph::GraphState for $name {
            type Update = $update;
            type Event = $crate::__graph_event_ty!($($event)?);

            fn apply(&mut self, update: $update) {
                $( $crate::__graph_apply!($kind self.$field, update.$field); )*
            }

            $crate::__graph_decode!($how);
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __graph_decode {
    (derived) => {};
    (by_hand) => {
        fn decode(value: &serde_json::Value) -> Result<Self, String> {
            Self::from_value(value)
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
