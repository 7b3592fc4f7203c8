//! The progress line of `sluice run`.

use sluice_runtime::Progress;
use std::sync::mpsc;
use std::time::Duration;

/// The progress line of `sluice run`: a bar when some node knows how many items it will
/// produce (a `head`, a file source), else a count. Drawn on stderr only when it is a terminal;
/// cleared when dropped.
pub(crate) struct ProgressLine {
    /// Dropped to end the drawing thread: its wait between redraws ends at once (a sleep would
    /// hold every run's exit up to one redraw interval, 0.2 s).
    done: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Steps of the bar (per mille, so that a long run moves it smoothly).
const BAR_STEPS: u64 = 1000;

impl ProgressLine {
    /// Starts drawing the progress of a run on stderr (when it is a terminal).
    pub(crate) fn start(progress: Progress) -> Self {
        let (done, wait) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                let bar = indicatif::ProgressBar::with_draw_target(
                    Some(BAR_STEPS),
                    indicatif::ProgressDrawTarget::stderr(),
                );
                let mut bounded = None;
                while let Err(mpsc::RecvTimeoutError::Timeout) =
                    wait.recv_timeout(Duration::from_millis(200))
                {
                    let (message, fraction) = progress_message(&progress);
                    if bounded != Some(fraction.is_some()) {
                        bounded = Some(fraction.is_some());
                        bar.set_style(progress_style(fraction.is_some()));
                    }
                    if let Some(f) = fraction {
                        bar.set_position((f * BAR_STEPS as f64) as u64);
                    }
                    bar.set_message(message);
                    bar.tick();
                }
                bar.finish_and_clear();
            })
            .ok();
        ProgressLine {
            done: Some(done),
            thread,
        }
    }
}

impl Drop for ProgressLine {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn progress_style(bounded: bool) -> indicatif::ProgressStyle {
    let template = if bounded {
        "{spinner} [{bar:24}] {percent:>3}% {elapsed} eta {eta} {msg}"
    } else {
        "{spinner} {elapsed} {msg}"
    };
    indicatif::ProgressStyle::with_template(template)
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> ")
}

/// What the progress line says now, and how far the run is (0 to 1) when some node knows its
/// length: the bounded node furthest along, since the graph ends at its tightest bound.
fn progress_message(progress: &Progress) -> (String, Option<f64>) {
    match progress.leading() {
        Some((node, fraction)) => (
            format!(
                "{} {}/{}",
                node.name,
                node.items_out,
                node.length.unwrap_or(0)
            ),
            Some(fraction),
        ),
        None => {
            let moved: u64 = progress.snapshot().iter().map(|n| n.items_out).sum();
            (format!("{moved} items produced"), None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_cmd::DEFAULT_GRAPH;
    use sluice_runtime::RunOptions;

    #[test]
    fn the_progress_line_follows_the_bounded_node_furthest_along() {
        let text = DEFAULT_GRAPH.replace("20_000_000", "300_000");
        let registry = sluice_blocks::graph_blocks::standard_registry();
        let graph = sluice_graph::load_str(&text, "default", &registry).unwrap();
        let progress = Progress::new();
        assert_eq!(
            progress_message(&progress),
            ("0 items produced".into(), None)
        );
        let opts = RunOptions {
            progress: Some(progress.clone()),
            ..RunOptions::default()
        };
        graph.run(&opts).unwrap();
        let (message, fraction) = progress_message(&progress);
        assert_eq!(message, "head 300000/300000");
        assert_eq!(fraction, Some(1.0));
    }
}
