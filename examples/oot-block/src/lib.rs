//! A user's own block, declared outside the sluice workspace and registered beside the standard
//! ones: `clip` limits every f32 sample to `±level`, and `level` can change while the graph
//! runs. `graph.toml` beside this crate uses it; `cargo test` runs that graph.

use sluice_blocks::blocks::apply::Apply;
use sluice_graph::{Block, BlockType, Family, ItemDecl, Param, Registry};
use sluice_runtime::{ControlSpec, Rated};

const LEVEL: ControlSpec = ControlSpec {
    name: "level",
    expects: "a finite number",
    help: "the largest magnitude passed",
};

/// `clip`: `out = clamp(in, -level, level)`.
pub struct Clip;

impl Block for Clip {
    fn block_type() -> BlockType {
        BlockType::new("clip", Family::Other, "Limits every sample to ±`level`.")
            .input("in", ItemDecl::fixed("f32"))
            .output("out", ItemDecl::fixed("f32"))
            .param(
                Param::number("level", LEVEL.help)
                    .min(0.0)
                    .default(1.0)
                    .settable(),
            )
            .example("level = 0.5")
            .build(|p| {
                let clip = |level: &f32, x: &[f32], y: &mut [f32]| {
                    for (y, x) in y.iter_mut().zip(x) {
                        *y = x.clamp(-*level, *level);
                    }
                    y.len()
                };
                let apply = Apply::new(p.f32("level")?, clip);
                Ok(Box::new(Rated::new(
                    apply.settable(LEVEL, |l, v| *l = v as f32),
                )))
            })
    }
}

/// The standard blocks and this crate's.
pub fn registry() -> Registry {
    let mut registry = sluice_blocks::graph_blocks::standard_registry();
    registry
        .register::<Clip>()
        .expect("clip is not a standard block's name");
    registry
}
