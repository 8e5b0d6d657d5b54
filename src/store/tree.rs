//! The trees of a project: manuscript sections and plot items each form a
//! forest inside one project. Every write that places a record checks that
//! its parent exists in the same project and that no parent chain loops, and
//! that the record does not move between projects; deletes walk the subtree
//! with a visited set, so even data another app corrupted cannot make them
//! loop.

use std::collections::{HashMap, HashSet};

use super::error::{Result, StoreError};
use super::model::{ManuscriptSection, PlotItem};

/// A record of a project tree.
pub trait TreeRecord {
    fn id(&self) -> &str;
    fn project_id(&self) -> &str;
    fn parent_id(&self) -> Option<&str>;
}

macro_rules! tree_record {
    ($ty:ty) => {
        impl TreeRecord for $ty {
            fn id(&self) -> &str {
                &self.id
            }
            fn project_id(&self) -> &str {
                &self.project_id
            }
            fn parent_id(&self) -> Option<&str> {
                self.parent_id.as_deref().filter(|p| !p.is_empty())
            }
        }
    };
}
tree_record!(ManuscriptSection);
tree_record!(PlotItem);

fn invalid(field: impl Into<String>, message: impl Into<String>) -> StoreError {
    StoreError::Invalid { field: field.into(), message: message.into() }
}

/// Checks that putting `record` among `project` (the project's records of
/// the same kind, as stored) keeps a forest; `field` names it in errors.
pub fn check_placement<T: TreeRecord>(field: &str, record: &T, project: &[T]) -> Result<()> {
    let Some(parent) = record.parent_id() else {
        return Ok(());
    };
    if parent == record.id() {
        return Err(invalid(format!("{field}.parentId"), "a record cannot be its own parent"));
    }
    let parents: HashMap<&str, Option<&str>> = project
        .iter()
        .filter(|r| r.id() != record.id())
        .map(|r| (r.id(), r.parent_id()))
        .chain([(record.id(), Some(parent))])
        .collect();
    if !parents.contains_key(parent) {
        return Err(invalid(format!("{field}.parentId"), format!("{parent:?} is not in the same project")));
    }
    if loops_from(record.id(), &parents) {
        return Err(invalid(format!("{field}.parentId"), "this parent would put the record under itself"));
    }
    Ok(())
}

/// Checks a whole set of records of one project (an import): ids unique,
/// every parent among them, no loops.
pub fn check_forest<T: TreeRecord>(field: &str, records: &[T]) -> Result<()> {
    let mut parents = HashMap::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        if parents.insert(r.id(), r.parent_id()).is_some() {
            return Err(invalid(format!("{field}[{i}].id"), format!("{:?} appears twice", r.id())));
        }
    }
    for (i, r) in records.iter().enumerate() {
        if let Some(parent) = r.parent_id() {
            if !parents.contains_key(parent) {
                return Err(invalid(format!("{field}[{i}].parentId"), format!("{parent:?} is not in the document")));
            }
        }
        if loops_from(r.id(), &parents) {
            return Err(invalid(format!("{field}[{i}].parentId"), "the parents form a loop"));
        }
    }
    Ok(())
}

/// Whether walking up from `id` comes back to a record already passed.
fn loops_from(id: &str, parents: &HashMap<&str, Option<&str>>) -> bool {
    let mut seen = HashSet::new();
    let mut at = Some(id);
    while let Some(current) = at {
        if !seen.insert(current) {
            return true;
        }
        at = parents.get(current).copied().flatten();
    }
    false
}

/// The ids of `root` and everything under it, children after their parent;
/// terminates on any data (each record is visited once).
pub fn subtree<T: TreeRecord>(root: &str, project: &[T]) -> Vec<String> {
    let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
    for r in project {
        if let Some(parent) = r.parent_id() {
            children.entry(parent).or_default().push(r.id());
        }
    }
    let mut order = vec![root.to_owned()];
    let mut seen: HashSet<&str> = HashSet::from([root]);
    let mut queue = vec![root];
    while let Some(next) = queue.pop() {
        for child in children.get(next).into_iter().flatten() {
            if seen.insert(child) {
                order.push((*child).to_owned());
                queue.push(child);
            }
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, parent: Option<&str>) -> PlotItem {
        PlotItem {
            id: id.into(),
            project_id: "p".into(),
            parent_id: parent.map(str::to_owned),
            title: id.into(),
            summary: String::new(),
            order: 0.0,
            created_at: 0.0,
            updated_at: 0.0,
        }
    }

    #[test]
    fn placements_that_loop_or_leave_the_project_are_refused() {
        let tree = [item("a", None), item("b", Some("a")), item("c", Some("b"))];
        assert!(check_placement("item", &item("d", Some("c")), &tree).is_ok());
        assert!(check_placement("item", &item("a", Some("c")), &tree).is_err(), "a under its grandchild");
        assert!(check_placement("item", &item("b", Some("b")), &tree).is_err());
        assert!(check_placement("item", &item("d", Some("elsewhere")), &tree).is_err());
        let err = check_placement("item", &item("a", Some("b")), &tree).unwrap_err();
        assert_eq!(err.code(), "invalid_argument");
        assert!(err.to_string().contains("item.parentId"), "{err}");
    }

    #[test]
    fn forests_need_known_parents_unique_ids_and_no_loops() {
        assert!(check_forest("plots", &[item("a", None), item("b", Some("a"))]).is_ok());
        assert!(check_forest("plots", &[item("a", Some("b")), item("b", Some("a"))]).is_err());
        assert!(check_forest("plots", &[item("a", None), item("a", None)]).is_err());
        let err = check_forest("plots", &[item("a", None), item("b", Some("zz"))]).unwrap_err();
        assert!(err.to_string().contains("plots[1].parentId"), "{err}");
    }

    #[test]
    fn subtrees_end_even_on_looping_data() {
        let looped = [item("a", Some("c")), item("b", Some("a")), item("c", Some("b")), item("x", None)];
        let mut ids = subtree("a", &looped);
        ids.sort();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(subtree("x", &looped), ["x"]);
    }
}
