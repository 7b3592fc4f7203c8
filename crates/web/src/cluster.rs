//! The cluster view: what the console shows of a `sluice cluster run` (every host, its
//! partition's nodes and their rates, its CPU, its standby or primary, its state, and the
//! failovers with their takeover records), as `GET /api/cluster` and the stats stream's
//! `cluster` events.
//!
//! The console knows no cluster crate (the architecture keeps `web` beneath `cluster`): the
//! controller's caller converts each host's status into a [`HostReport`] and hands the lot to
//! [`ClusterView::update`] as counts arrive. The update computes rates from the difference to
//! the host's previous report and builds the snapshot there, on the caller's thread; the
//! console's threads only ever take a copy of the latest snapshot's pointer, under a lock
//! held for that copy alone, so no client (slow, hostile, or many) makes the controller wait.
//!
//! Everything in a report came from a worker (host and node names, failure messages,
//! takeover causes): it is data for JSON and for the page's `textContent`, never markup.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// Failovers kept in the view (each pair fails over a handful of times in a run at most).
pub const MAX_FAILOVERS: usize = 64;

/// Where a host's partition stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostState {
    /// It runs (a warm standby waiting for its lease included).
    #[default]
    Running,
    /// It ran to its end.
    Done,
    /// It ended because the run was asked to stop.
    Stopped,
    /// It failed, and the run stops because of it.
    Failed,
    /// Its worker was lost (its connection closed or went silent), and the run stops.
    Lost,
    /// It failed or was lost while its partner ran on: the run goes on without it.
    FailedOver,
}

impl HostState {
    /// The state's word in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            HostState::Running => "running",
            HostState::Done => "done",
            HostState::Stopped => "stopped",
            HostState::Failed => "failed",
            HostState::Lost => "lost",
            HostState::FailedOver => "failed_over",
        }
    }
}

/// The other replica of a host's partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartnerLink {
    /// This host is the primary; the named host is its standby.
    Standby(String),
    /// This host is the standby of the named host.
    StandbyOf(String),
}

/// One node's counts on a host.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeReport {
    /// The node's name.
    pub name: String,
    /// Items consumed, summed over its inputs.
    pub items_in: u64,
    /// Items produced, summed over its outputs.
    pub items_out: u64,
}

/// A change of primary that a host's fenced receiver saw: the takeover record. Times are
/// seconds since the Unix epoch, by the reporting host's clock.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TakeoverReport {
    /// The protected host whose partition changed primary (the receiver's fence).
    pub fence: String,
    /// The stream offset (items) at which the new primary resumed.
    pub offset: u64,
    /// The old primary's lease revision.
    pub from_revision: u64,
    /// The new primary's lease revision.
    pub to_revision: u64,
    /// When the old primary was declared lost (`None`: displaced while connected).
    pub lost_unix_s: Option<f64>,
    /// Why it was lost.
    pub lost_cause: Option<String>,
    /// When the new primary was welcomed.
    pub resumed_unix_s: f64,
    /// When the new primary's first item came.
    pub first_item_unix_s: Option<f64>,
}

/// A standby won its partition's lease.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PromotionReport {
    /// The protected host whose partition it took over.
    pub fence: String,
    /// Its lease revision.
    pub revision: u64,
    /// Milliseconds from the old primary's key vanishing to the win.
    pub after_vanished_ms: u64,
    /// When it won, in seconds since the Unix epoch (its own clock).
    pub unix_s: f64,
}

/// One host's part of a cluster run, as its controller last heard it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HostReport {
    /// The host's name.
    pub host: String,
    /// Seconds since the run started, by the host's worker.
    pub elapsed_s: f64,
    /// CPU seconds the host's worker used in the run.
    pub cpu_s: f64,
    /// Its partition's nodes.
    pub nodes: Vec<NodeReport>,
    /// Where it stands.
    pub state: HostState,
    /// Why it failed or was lost.
    pub message: Option<String>,
    /// Its standby, or the host it is the standby of.
    pub partner: Option<PartnerLink>,
    /// Takeovers its fenced receivers saw.
    pub takeovers: Vec<TakeoverReport>,
    /// Set once it, a standby, won its partition's lease.
    pub promotion: Option<PromotionReport>,
}

/// The live view of a cluster run: filled by the controller's caller ([`update`]), read by
/// the console. Cheap to clone (clones share the view).
///
/// [`update`]: ClusterView::update
#[derive(Debug, Clone)]
pub struct ClusterView {
    latest: Arc<Mutex<Arc<Value>>>,
    state: Arc<Mutex<Tracker>>,
}

impl Default for ClusterView {
    fn default() -> Self {
        ClusterView::new()
    }
}

/// What rates and first sightings are computed from (touched by [`ClusterView::update`]
/// only).
#[derive(Debug)]
struct Tracker {
    started: Instant,
    updates: u64,
    /// Per host: its last report's elapsed time, CPU and items out per node, and the rates.
    hosts: BTreeMap<String, Rates>,
    /// When each failover (partition, revision) was first seen, in seconds since the view
    /// was made.
    seen: BTreeMap<(String, u64), f64>,
}

#[derive(Debug, Default, Clone)]
struct Rates {
    elapsed_s: f64,
    cpu_s: f64,
    items_out: BTreeMap<String, u64>,
    cpu_percent: Option<f64>,
    items_per_s: BTreeMap<String, f64>,
}

impl ClusterView {
    /// An empty view (no host yet).
    pub fn new() -> ClusterView {
        ClusterView {
            latest: Arc::new(Mutex::new(Arc::new(json!({
                "updates": 0, "hosts": [], "failovers": [],
            })))),
            state: Arc::new(Mutex::new(Tracker {
                started: Instant::now(),
                updates: 0,
                hosts: BTreeMap::new(),
                seen: BTreeMap::new(),
            })),
        }
    }

    /// Every host's latest report, in the plan's order: rates are computed against each
    /// host's previous report, and the snapshot the console serves is replaced.
    pub fn update(&self, hosts: &[HostReport]) {
        let snapshot = {
            let mut t = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            t.updates += 1;
            for h in hosts {
                t.hosts.entry(h.host.clone()).or_default().advance(h);
            }
            let now = t.started.elapsed().as_secs_f64();
            let failovers = failovers(hosts);
            for f in &failovers {
                t.seen
                    .entry((f.partition.clone(), f.revision))
                    .or_insert(now);
            }
            let host_json: Vec<Value> = hosts
                .iter()
                .map(|h| host_json(h, t.hosts.get(&h.host)))
                .collect();
            let failover_json: Vec<Value> = failovers
                .iter()
                .map(|f| f.to_json(t.seen.get(&(f.partition.clone(), f.revision)).copied()))
                .collect();
            Arc::new(json!({
                "updates": t.updates,
                "hosts": host_json,
                "failovers": failover_json,
            }))
        };
        *self.latest.lock().unwrap_or_else(PoisonError::into_inner) = snapshot;
    }

    /// The latest snapshot (the JSON of `GET /api/cluster`, less the console's own fields).
    pub fn snapshot(&self) -> Arc<Value> {
        Arc::clone(&self.latest.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// How many updates the view has had (the page redraws when it changes).
    pub fn updates(&self) -> u64 {
        self.snapshot()["updates"].as_u64().unwrap_or(0)
    }
}

impl Rates {
    /// Takes `h`'s new report: rates over the time since the previous one (kept when the
    /// worker's clock has not moved, as between two messages of one period).
    fn advance(&mut self, h: &HostReport) {
        let dt = h.elapsed_s - self.elapsed_s;
        if dt > 1e-3 && self.elapsed_s > 0.0 {
            self.cpu_percent = Some((100.0 * (h.cpu_s - self.cpu_s) / dt).max(0.0));
            for n in &h.nodes {
                if let Some(before) = self.items_out.get(&n.name) {
                    let rate = n.items_out.saturating_sub(*before) as f64 / dt;
                    self.items_per_s.insert(n.name.clone(), rate);
                }
            }
        }
        if dt > 1e-3 || self.elapsed_s == 0.0 {
            self.elapsed_s = h.elapsed_s;
            self.cpu_s = h.cpu_s;
            self.items_out = h
                .nodes
                .iter()
                .map(|n| (n.name.clone(), n.items_out))
                .collect();
        }
    }
}

fn host_json(h: &HostReport, rates: Option<&Rates>) -> Value {
    let running = h.state == HostState::Running;
    // A host that ended: its CPU over the whole run; one that runs: over the last period.
    let cpu_percent = match rates.and_then(|r| r.cpu_percent) {
        Some(p) if running => Some(p),
        _ if h.elapsed_s > 0.0 => Some(100.0 * h.cpu_s / h.elapsed_s),
        _ => None,
    };
    let nodes: Vec<Value> = h
        .nodes
        .iter()
        .map(|n| {
            let rate = rates
                .filter(|_| running)
                .and_then(|r| r.items_per_s.get(&n.name).copied());
            json!({"name": n.name, "items_in": n.items_in, "items_out": n.items_out, "items_per_s": rate})
        })
        .collect();
    let partner = h.partner.as_ref().map(|p| match p {
        PartnerLink::Standby(s) => json!({"role": "primary", "standby": s}),
        PartnerLink::StandbyOf(p) => json!({"role": "standby", "primary": p}),
    });
    json!({
        "name": h.host,
        "state": h.state.as_str(),
        "message": h.message,
        "elapsed_s": h.elapsed_s,
        "cpu_s": h.cpu_s,
        "cpu_percent": cpu_percent,
        "partner": partner,
        "promoted": h.promotion.as_ref().map(|p| json!({
            "partition": p.fence, "revision": p.revision,
            "after_vanished_ms": p.after_vanished_ms, "unix_s": p.unix_s,
        })),
        "nodes": nodes,
    })
}

/// One failover: a partition's change of primary to lease revision `revision`, with what
/// the standby and each receiver of the partition's streams reported of it.
#[derive(Debug, Clone, PartialEq)]
struct Failover {
    /// The protected host (the partition's name and fence).
    partition: String,
    revision: u64,
    from_revision: Option<u64>,
    /// The replica that took over, and the one it took over from.
    took_over: Option<String>,
    failed: Option<String>,
    promotion: Option<PromotionReport>,
    /// Each receiver's record: (the host it runs on, the record).
    streams: Vec<(String, TakeoverReport)>,
}

/// The failovers the hosts' reports tell of, one per (partition, revision), oldest first.
fn failovers(hosts: &[HostReport]) -> Vec<Failover> {
    let mut by_key: BTreeMap<(String, u64), Failover> = BTreeMap::new();
    let new = |partition: &str, revision| Failover {
        partition: partition.to_string(),
        revision,
        from_revision: None,
        took_over: None,
        failed: None,
        promotion: None,
        streams: Vec::new(),
    };
    for h in hosts {
        if let Some(p) = &h.promotion {
            let f = by_key
                .entry((p.fence.clone(), p.revision))
                .or_insert_with(|| new(&p.fence, p.revision));
            f.took_over = Some(h.host.clone());
            f.promotion = Some(p.clone());
        }
        for t in &h.takeovers {
            let f = by_key
                .entry((t.fence.clone(), t.to_revision))
                .or_insert_with(|| new(&t.fence, t.to_revision));
            f.from_revision = Some(t.from_revision);
            f.streams.push((h.host.clone(), t.clone()));
        }
    }
    let partner_of = |name: &str| {
        hosts
            .iter()
            .find(|h| h.host == name)
            .and_then(|h| match &h.partner {
                Some(PartnerLink::Standby(s)) => Some(s.clone()),
                Some(PartnerLink::StandbyOf(p)) => Some(p.clone()),
                None => None,
            })
    };
    let mut list: Vec<Failover> = by_key
        .into_values()
        .map(|mut f| {
            // Without the standby's own word (not reported yet), the pair's standby is the
            // one that took over the protected host's partition.
            if f.took_over.is_none() {
                f.took_over = partner_of(&f.partition);
            }
            f.failed = match &f.took_over {
                Some(t) if *t == f.partition => partner_of(&f.partition),
                Some(_) => Some(f.partition.clone()),
                None => None,
            };
            f
        })
        .collect();
    list.sort_by(|a, b| a.first_unix_s().total_cmp(&b.first_unix_s()));
    if list.len() > MAX_FAILOVERS {
        list.drain(..list.len() - MAX_FAILOVERS);
    }
    list
}

impl Failover {
    /// The earliest time any report gives it.
    fn first_unix_s(&self) -> f64 {
        self.promotion
            .iter()
            .map(|p| p.unix_s)
            .chain(self.streams.iter().map(|(_, t)| t.resumed_unix_s))
            .fold(f64::INFINITY, f64::min)
    }

    fn to_json(&self, seen_s: Option<f64>) -> Value {
        let streams: Vec<Value> = self
            .streams
            .iter()
            .map(|(host, t)| {
                json!({
                    "seen_by": host, "offset": t.offset,
                    "from_revision": t.from_revision, "to_revision": t.to_revision,
                    "lost_unix_s": t.lost_unix_s, "lost_cause": t.lost_cause,
                    "resumed_unix_s": t.resumed_unix_s,
                    "first_item_unix_s": t.first_item_unix_s,
                })
            })
            .collect();
        json!({
            "partition": self.partition,
            "failed": self.failed,
            "took_over": self.took_over,
            "revision": self.revision,
            "from_revision": self.from_revision,
            "unix_s": self.first_unix_s().is_finite().then(|| self.first_unix_s()),
            "seen_s": seen_s,
            "after_vanished_ms": self.promotion.as_ref().map(|p| p.after_vanished_ms),
            "streams": streams,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str, elapsed_s: f64, cpu_s: f64, items: u64) -> HostReport {
        HostReport {
            host: name.into(),
            elapsed_s,
            cpu_s,
            nodes: vec![NodeReport {
                name: "fir".into(),
                items_in: items,
                items_out: items,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn rates_come_from_the_difference_to_the_previous_report() {
        let view = ClusterView::new();
        view.update(&[host("h1", 1.0, 0.5, 1000)]);
        let s = view.snapshot();
        assert_eq!(s["hosts"][0]["nodes"][0]["items_per_s"], Value::Null);
        view.update(&[host("h1", 1.5, 0.75, 2000)]);
        let s = view.snapshot();
        let h = &s["hosts"][0];
        assert_eq!(h["name"], "h1");
        assert_eq!(h["state"], "running");
        assert!(
            (h["cpu_percent"].as_f64().unwrap() - 50.0).abs() < 1e-9,
            "{h}"
        );
        assert!((h["nodes"][0]["items_per_s"].as_f64().unwrap() - 2000.0).abs() < 1e-9);
        assert_eq!(view.updates(), 2);
        // A finished host shows its whole run's share.
        let mut done = host("h1", 2.0, 0.5, 3000);
        done.state = HostState::Done;
        view.update(&[done]);
        let s = view.snapshot();
        assert!((s["hosts"][0]["cpu_percent"].as_f64().unwrap() - 25.0).abs() < 1e-9);
        assert_eq!(s["hosts"][0]["nodes"][0]["items_per_s"], Value::Null);
    }

    #[test]
    fn a_failover_joins_the_standbys_promotion_and_each_receivers_record() {
        let mut primary = host("h2", 3.0, 1.0, 10);
        primary.state = HostState::FailedOver;
        primary.message = Some("worker lost".into());
        primary.partner = Some(PartnerLink::Standby("h3".into()));
        let mut standby = host("h3", 3.0, 1.0, 10);
        standby.partner = Some(PartnerLink::StandbyOf("h2".into()));
        let mut receiver = host("h4", 3.0, 0.1, 10);
        receiver.takeovers = vec![TakeoverReport {
            fence: "h2".into(),
            offset: 123_456,
            from_revision: 7,
            to_revision: 9,
            lost_unix_s: Some(1000.0),
            lost_cause: Some("connection reset".into()),
            resumed_unix_s: 1001.5,
            first_item_unix_s: Some(1001.6),
        }];
        let view = ClusterView::new();
        view.update(&[primary.clone(), standby.clone(), receiver.clone()]);
        let s = view.snapshot();
        let f = &s["failovers"][0];
        assert_eq!(f["partition"], "h2");
        assert_eq!(
            f["took_over"], "h3",
            "the pair's standby, before its own word"
        );
        assert_eq!(f["failed"], "h2");
        assert_eq!(f["streams"][0]["seen_by"], "h4");
        assert_eq!(f["streams"][0]["offset"], 123_456);
        assert_eq!(f["unix_s"], 1001.5);
        standby.promotion = Some(PromotionReport {
            fence: "h2".into(),
            revision: 9,
            after_vanished_ms: 40,
            unix_s: 1001.2,
        });
        view.update(&[primary, standby, receiver]);
        let s = view.snapshot();
        assert_eq!(s["failovers"].as_array().unwrap().len(), 1, "{s}");
        let f = &s["failovers"][0];
        assert_eq!(f["after_vanished_ms"], 40);
        assert_eq!(f["unix_s"], 1001.2);
        assert_eq!(f["from_revision"], 7);
        assert_eq!(s["hosts"][0]["state"], "failed_over");
        assert_eq!(s["hosts"][2]["partner"], Value::Null);
        assert_eq!(s["hosts"][1]["partner"]["primary"], "h2");
    }
}
