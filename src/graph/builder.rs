//! Building a graph: nodes, static and conditional edges, and the checks
//! made when compiling it.

use std::collections::HashMap;
use std::rc::Rc;

use super::error::{GraphError, Result};
use super::node::{Node, Router, END, START};
use super::run::{CompiledGraph, Edge, Target};
use super::state::GraphState;

enum EdgeSpec<S> {
    Static(String),
    Conditional(Router<S>, Vec<String>),
}

/// A graph under construction.
pub struct StateGraph<S: GraphState> {
    nodes: Vec<(String, Rc<dyn Node<S>>)>,
    edges: Vec<(String, EdgeSpec<S>)>,
}

impl<S: GraphState> Default for StateGraph<S> {
    fn default() -> Self {
        StateGraph { nodes: Vec::new(), edges: Vec::new() }
    }
}

impl<S: GraphState> StateGraph<S> {
    pub fn new() -> StateGraph<S> {
        StateGraph::default()
    }

    /// Adds a node.
    pub fn add_node(mut self, name: &str, node: impl Node<S> + 'static) -> Self {
        self.nodes.push((name.to_owned(), Rc::new(node)));
        self
    }

    /// Always go from `from` to `to` (a node or [`END`]).
    pub fn add_edge(mut self, from: &str, to: &str) -> Self {
        self.edges.push((from.to_owned(), EdgeSpec::Static(to.to_owned())));
        self
    }

    /// After `from`, go where `router` says; it may only name `targets`.
    pub fn add_conditional_edges(
        mut self,
        from: &str,
        router: impl Fn(&S) -> String + 'static,
        targets: &[&str],
    ) -> Self {
        let targets = targets.iter().map(|t| (*t).to_owned()).collect();
        self.edges.push((from.to_owned(), EdgeSpec::Conditional(Rc::new(router), targets)));
        self
    }

    /// Checks the graph and makes it runnable: every edge names a known
    /// node, START has one edge, every node has exactly one way out, and
    /// every node can be reached.
    pub fn compile(self) -> Result<CompiledGraph<S>> {
        let mut index = HashMap::new();
        for (i, (name, _)) in self.nodes.iter().enumerate() {
            if name == START || name == END || index.insert(name.clone(), i).is_some() {
                return Err(GraphError::DuplicateNode(name.clone()));
            }
        }
        let target = |from: &str, to: &str| -> Result<Target> {
            if to == END {
                return Ok(Target::End);
            }
            index
                .get(to)
                .map(|&i| Target::Node(i))
                .ok_or_else(|| GraphError::UnknownNode { from: from.to_owned(), to: to.to_owned() })
        };
        let mut entry = None;
        let mut edges: Vec<Option<Edge<S>>> = (0..self.nodes.len()).map(|_| None).collect();
        for (from, spec) in self.edges {
            let edge = match spec {
                EdgeSpec::Static(to) => Edge::Static(target(&from, &to)?),
                EdgeSpec::Conditional(router, targets) => {
                    let routes =
                        targets.iter().map(|t| Ok((t.clone(), target(&from, t)?))).collect::<Result<Vec<_>>>()?;
                    Edge::Conditional { router, routes }
                }
            };
            let slot = if from == START {
                &mut entry
            } else {
                let i = *index
                    .get(&from)
                    .ok_or_else(|| GraphError::UnknownNode { from: START.to_owned(), to: from.clone() })?;
                &mut edges[i]
            };
            if slot.replace(edge).is_some() {
                return Err(GraphError::SeveralWaysOut(from));
            }
        }
        let entry = entry.ok_or(GraphError::NoEntry)?;
        let edges = edges
            .into_iter()
            .enumerate()
            .map(|(i, e)| e.ok_or_else(|| GraphError::NoWayOut(self.nodes[i].0.clone())))
            .collect::<Result<Vec<_>>>()?;

        // Reachability from START.
        let mut seen = vec![false; self.nodes.len()];
        let mut stack: Vec<usize> = entry.targets().collect();
        while let Some(i) = stack.pop() {
            if !std::mem::replace(&mut seen[i], true) {
                stack.extend(edges[i].targets());
            }
        }
        if let Some(i) = seen.iter().position(|s| !s) {
            return Err(GraphError::Unreachable(self.nodes[i].0.clone()));
        }
        Ok(CompiledGraph::new(self.nodes, edges, entry))
    }
}
