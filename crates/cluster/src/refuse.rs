//! Block types a worker's own configuration refuses (`sluice worker --refuse-blocks
//! tcp_sink,zmq_push_sink`): a partition that has a node of one of them is not loaded, whoever
//! the controller is. A worker that must never send data elsewhere, or never touch files,
//! says so itself instead of trusting every controller to.

use sluice_graph::{PartitionDoc, Registry};

/// The block types a worker refuses.
#[derive(Debug, Clone, Default)]
pub struct RefusedBlocks(Vec<String>);

impl RefusedBlocks {
    /// The types named in `list` (comma-separated), each checked against `registry`: a name
    /// that is not a block type is an error (a typo would refuse nothing).
    pub fn parse(list: &str, registry: &Registry) -> Result<Self, String> {
        let mut names = Vec::new();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if registry.find(name).is_none() {
                return Err(format!(
                    "--refuse-blocks names '{}', which is not a block type (`sluice blocks` lists them)",
                    sluice_net::escape::text(name)
                ));
            }
            names.push(name.to_string());
        }
        Ok(RefusedBlocks(names))
    }

    /// Whether no type is refused.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Checks a partition: the first node of a refused type is the error, naming the node
    /// and its type; a stream endpoint counts as the stream block it becomes.
    pub fn check(&self, partition: &PartitionDoc) -> Result<(), String> {
        if self.0.is_empty() {
            return Ok(());
        }
        let nodes = partition
            .graph
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), n.kind.as_str()))
            .chain(
                partition
                    .streams
                    .iter()
                    .map(|e| (e.name.as_str(), sluice_net::graph_blocks::endpoint_type(e))),
            );
        for (name, kind) in nodes {
            if self.0.iter().any(|r| r == kind) {
                return Err(format!(
                    "node '{}' is a {kind}, a block type this worker's configuration refuses (--refuse-blocks {})",
                    sluice_net::escape::text(name),
                    self.0.join(",")
                ));
            }
        }
        Ok(())
    }
}
