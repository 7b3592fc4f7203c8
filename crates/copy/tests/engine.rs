//! The engine's behaviour: ordering within a channel, priorities between channels,
//! cancellation, tickets (poll, wait, timeout, completion queue), dropped and forgotten
//! tickets, shutdown with work queued, and the inline path below break-even.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use sluice_copy::{
    Backend, BreakEven, ChannelOptions, CopyError, Engine, EngineOptions, Kernels, Op, Pattern,
    Priority, RawRegion,
};

const LONG: Duration = Duration::from_secs(5);

/// A backend that records the size of every operation it runs and holds the first one until
/// the test opens the gate.
struct GateBackend {
    log: Mutex<Vec<usize>>,
    open: Mutex<bool>,
    cv: Condvar,
    entered: Mutex<Option<mpsc::Sender<()>>>,
    kernels: Kernels,
}

impl GateBackend {
    fn new() -> (Arc<Self>, mpsc::Receiver<()>) {
        let (tx, rx) = mpsc::channel();
        (
            Arc::new(GateBackend {
                log: Mutex::new(Vec::new()),
                open: Mutex::new(false),
                cv: Condvar::new(),
                entered: Mutex::new(Some(tx)),
                kernels: Kernels::detect(),
            }),
            rx,
        )
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }

    fn log(&self) -> Vec<usize> {
        self.log.lock().unwrap().clone()
    }
}

impl Backend for GateBackend {
    fn name(&self) -> &'static str {
        "gate"
    }

    unsafe fn execute(&self, op: &Op, src: *const u8, dst: *mut u8) -> Result<(), CopyError> {
        self.log.lock().unwrap().push(op.bytes());
        if let Some(tx) = self.entered.lock().unwrap().take() {
            let _ = tx.send(());
            let mut open = self.open.lock().unwrap();
            while !*open {
                open = self.cv.wait(open).unwrap();
            }
        }
        // SAFETY: forwarded contract of `Backend::execute`.
        unsafe { self.kernels.run(op, src, dst) };
        Ok(())
    }
}

fn gated_engine(workers: usize) -> (Engine, Arc<GateBackend>, mpsc::Receiver<()>) {
    let (gate, entered) = GateBackend::new();
    let engine = Engine::new(EngineOptions {
        workers,
        break_even: BreakEven::never_inline(),
        backend: Some(gate.clone()),
        ..EngineOptions::default()
    })
    .unwrap();
    (engine, gate, entered)
}

#[test]
fn higher_priority_channels_go_first_and_each_channel_keeps_its_order() {
    let (engine, gate, entered) = gated_engine(1);
    let mut blocker = engine.channel(Priority::LOW);
    let t0 = blocker.copy(vec![0u8; 1], vec![0u8; 1]).unwrap();
    blocker.submit();
    entered.recv_timeout(LONG).unwrap();
    // The only worker is held: queue work on a low and a high channel, low first.
    let mut low = engine.channel(Priority::LOW);
    let mut high = engine.channel(Priority::HIGH);
    let mut tickets = Vec::new();
    for n in [10usize, 11, 12] {
        tickets.push(low.copy(vec![1u8; n], vec![0u8; n]).unwrap());
    }
    low.submit();
    for n in [20usize, 21, 22] {
        tickets.push(high.copy(vec![2u8; n], vec![0u8; n]).unwrap());
    }
    high.submit();
    gate.open();
    t0.wait().into_result().unwrap();
    for t in tickets {
        t.wait().into_result().unwrap();
    }
    assert_eq!(gate.log(), vec![1, 20, 21, 22, 10, 11, 12]);
}

#[test]
fn concurrent_channels_each_apply_their_operations_in_order() {
    // Four channels on three workers; each channel fills its own region 200 times with
    // increasing bytes, so the region must end with the last fill, and the completion
    // queue must list the sequence numbers in order.
    let engine = Engine::new(EngineOptions {
        workers: 3,
        break_even: BreakEven::never_inline(),
        ..EngineOptions::default()
    })
    .unwrap();
    let mut mem = vec![0u8; 4 * 65536];
    let base = mem.as_mut_ptr();
    let mut channels: Vec<_> = (0..4)
        .map(|i| {
            engine.channel_with(ChannelOptions {
                priority: Priority::new(i as u8 * 2),
                completion_queue: true,
            })
        })
        .collect();
    let mut last = Vec::new();
    for round in 0..200u32 {
        for (i, ch) in channels.iter_mut().enumerate() {
            // SAFETY: region i of `mem` is used only by channel i, whose operations run one
            // at a time; `mem` lives until every operation is waited for below.
            let region = unsafe { RawRegion::new(base.add(i * 65536), 65536) };
            let t = ch.fill(region, Pattern::byte((round % 251) as u8)).unwrap();
            if round == 199 {
                last.push(t);
            }
        }
        if round % 7 == 0 || round == 199 {
            for ch in channels.iter_mut() {
                ch.submit();
            }
        }
    }
    for t in last {
        t.wait().into_result().unwrap();
    }
    for (i, ch) in channels.iter_mut().enumerate() {
        let mut done = Vec::new();
        ch.completed(&mut done);
        let seqs: Vec<u64> = done.iter().map(|c| c.seq).collect();
        assert_eq!(seqs, (0..200).collect::<Vec<u64>>(), "channel {i}");
        assert!(done.iter().all(|c| c.status.is_ok()));
    }
    drop(channels);
    drop(engine);
    assert!(mem.iter().all(|&x| x == 199));
}

#[test]
fn cancelling_removes_what_has_not_started() {
    let (engine, gate, entered) = gated_engine(1);
    let mut ch = engine.channel_with(ChannelOptions {
        priority: Priority::NORMAL,
        completion_queue: true,
    });
    let a = ch.copy(vec![1u8; 5], vec![0u8; 5]).unwrap();
    ch.submit();
    entered.recv_timeout(LONG).unwrap();
    let b = ch.copy(vec![2u8; 6], vec![0u8; 6]).unwrap();
    let c = ch.copy(vec![3u8; 7], vec![0u8; 7]).unwrap();
    ch.submit();
    assert!(!a.cancel(), "a running operation cannot be cancelled");
    assert!(c.cancel());
    assert!(!c.cancel(), "cancelled twice");
    let c = c.wait();
    assert_eq!(c.status, Err(CopyError::Cancelled));
    assert_eq!(c.buffers.1, vec![0u8; 7], "a cancelled copy wrote");
    gate.open();
    assert_eq!(b.wait().into_result().unwrap().1, vec![2u8; 6]);
    assert_eq!(a.wait().into_result().unwrap().1, vec![1u8; 5]);
    let mut done = Vec::new();
    ch.completed(&mut done);
    let summary: Vec<(u64, bool)> = done.iter().map(|c| (c.seq, c.status.is_ok())).collect();
    assert_eq!(summary, vec![(2, false), (0, true), (1, true)]);
    assert_eq!(gate.log(), vec![5, 6]);
    // Enqueued and never submitted: cancelled by cancel_pending.
    let d = ch.copy(vec![4u8; 3], vec![0u8; 3]).unwrap();
    assert_eq!(ch.cancel_pending(), 1);
    assert_eq!(d.wait().status, Err(CopyError::Cancelled));
}

#[test]
fn tickets_can_be_polled_waited_with_timeout_and_taken() {
    let (engine, gate, entered) = gated_engine(1);
    let mut ch = engine.channel(Priority::NORMAL);
    let t = ch.copy(vec![9u8; 64], vec![0u8; 64]).unwrap();
    ch.submit();
    entered.recv_timeout(LONG).unwrap();
    assert!(!t.is_done());
    let t = t.try_take().unwrap_err();
    let t = t.wait_timeout(Duration::from_millis(20)).unwrap_err();
    gate.open();
    let start = Instant::now();
    let mut t = Some(t);
    let done = loop {
        match t.take().unwrap().try_take() {
            Ok(done) => break done,
            Err(back) => {
                assert!(start.elapsed() < LONG, "copy never completed");
                std::thread::yield_now();
                t = Some(back);
            }
        }
    };
    assert_eq!(done.into_result().unwrap().1, vec![9u8; 64]);
}

#[test]
#[should_panic(expected = "before its channel submitted it")]
fn waiting_on_an_unsubmitted_ticket_panics_instead_of_hanging() {
    let engine = Engine::with_defaults().unwrap();
    let mut ch = engine.channel(Priority::NORMAL);
    let t = ch.copy(vec![1u8; 4], vec![0u8; 4]).unwrap();
    let _ = t.wait();
}

#[test]
fn dropped_tickets_are_fine_and_the_engine_frees_the_buffers() {
    let engine = Engine::new(EngineOptions {
        workers: 2,
        break_even: BreakEven::never_inline(),
        ..EngineOptions::default()
    })
    .unwrap();
    let mut ch = engine.channel_with(ChannelOptions {
        priority: Priority::NORMAL,
        completion_queue: true,
    });
    let src: Arc<[u8]> = vec![5u8; 1 << 20].into();
    for _ in 0..16 {
        // Dropped at once: the engine still owns the source clone and a destination.
        drop(ch.copy(src.clone(), vec![0u8; 1 << 20]).unwrap());
    }
    let forgotten = ch.copy(src.clone(), vec![0u8; 1 << 20]).unwrap();
    std::mem::forget(forgotten);
    ch.submit();
    let start = Instant::now();
    let mut done = Vec::new();
    while done.len() < 17 {
        ch.completed(&mut done);
        assert!(start.elapsed() < LONG, "operations never completed");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(done.iter().all(|c| c.status.is_ok()));
    // The dropped tickets' clones are gone; the forgotten ticket's clone is leaked (a leak,
    // never a use after free).
    let deadline = Instant::now() + LONG;
    while Arc::strong_count(&src) > 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(Arc::strong_count(&src), 2);
}

#[test]
fn dropping_the_engine_stops_queued_work_and_returns_the_buffers() {
    let (engine, gate, entered) = gated_engine(1);
    let mut ch = engine.channel(Priority::NORMAL);
    let a = ch.copy(vec![1u8; 8], vec![0u8; 8]).unwrap();
    ch.submit();
    entered.recv_timeout(LONG).unwrap();
    let b = ch.copy(vec![2u8; 9], vec![0u8; 9]).unwrap();
    ch.submit();
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let stopper = std::thread::spawn(move || {
        drop(engine);
        flag.store(true, Ordering::SeqCst);
    });
    let b = b.wait();
    assert_eq!(b.status, Err(CopyError::Stopped));
    assert_eq!(b.buffers.1, vec![0u8; 9]);
    gate.open();
    assert_eq!(a.wait().into_result().unwrap().1, vec![1u8; 8]);
    stopper.join().unwrap();
    assert!(dropped.load(Ordering::SeqCst));
    // A channel that outlives its engine completes new work as stopped.
    let c = ch.copy(vec![1u8; 8], vec![0u8; 8]).unwrap();
    ch.submit();
    assert_eq!(c.wait().status, Err(CopyError::Stopped));
}

#[test]
fn below_break_even_operations_finish_inside_submit() {
    let (gate, _entered) = GateBackend::new();
    gate.open();
    let mut be = BreakEven::never_inline();
    be.set(sluice_copy::OpKind::Copy, 1000);
    let engine = Engine::new(EngineOptions {
        workers: 1,
        break_even: be,
        backend: Some(gate.clone()),
        ..EngineOptions::default()
    })
    .unwrap();
    let mut ch = engine.channel(Priority::NORMAL);
    let small = ch.copy(vec![3u8; 999], vec![0u8; 999]).unwrap();
    ch.submit();
    assert!(small.is_done());
    assert_eq!(small.wait().into_result().unwrap().1, vec![3u8; 999]);
    let big = ch.copy(vec![4u8; 1000], vec![0u8; 1000]).unwrap();
    ch.submit();
    assert_eq!(big.wait().into_result().unwrap().1, vec![4u8; 1000]);
    assert_eq!(
        gate.log(),
        vec![1000],
        "only the large copy reached the backend"
    );
    assert_eq!(engine.backend_name(), "gate");
}

#[test]
fn synchronous_slices_run_inline_or_on_the_engine() {
    for be in [BreakEven::always_inline(), BreakEven::never_inline()] {
        let engine = Engine::new(EngineOptions {
            break_even: be,
            ..EngineOptions::default()
        })
        .unwrap();
        let mut ch = engine.channel(Priority::NORMAL);
        let src: Vec<u8> = (0..=255).cycle().take(100_000).collect();
        let mut dst = vec![0u8; 100_000];
        ch.copy_slice(&src, &mut dst).unwrap();
        assert_eq!(src, dst);
        assert!(matches!(
            ch.copy_slice(&src, &mut dst[..5]),
            Err(CopyError::LengthMismatch { .. })
        ));
        // A 2 × 3 transpose of u16 items through `run_slices`.
        let m: Vec<u8> = [1u16, 2, 3, 4, 5, 6]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let mut t = vec![0u8; 12];
        let op = Op::Rotate {
            src: sluice_copy::Plane {
                offset: 0,
                stride: 6,
            },
            dst: sluice_copy::Plane {
                offset: 0,
                stride: 4,
            },
            width: 3,
            height: 2,
            item: sluice_copy::ItemSize::B2,
            transform: sluice_copy::Transform::TRANSPOSE,
        };
        ch.run_slices(op.clone(), &m, &mut t).unwrap();
        let got: Vec<u16> = t
            .chunks(2)
            .map(|c| u16::from_ne_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(got, vec![1, 4, 2, 5, 3, 6]);
        assert!(matches!(
            ch.run_slices(op, &m, &mut t[..10]),
            Err(CopyError::OutOfBounds { .. })
        ));
    }
}

/// Panics on 13-byte operations.
struct PanickyBackend(Kernels);

impl Backend for PanickyBackend {
    fn name(&self) -> &'static str {
        "panicky"
    }

    unsafe fn execute(&self, op: &Op, src: *const u8, dst: *mut u8) -> Result<(), CopyError> {
        assert_ne!(op.bytes(), 13, "unlucky size");
        // SAFETY: forwarded contract of `Backend::execute`.
        unsafe { self.0.run(op, src, dst) };
        Ok(())
    }
}

#[test]
fn a_panicking_backend_fails_the_operation_and_the_channel_goes_on() {
    let engine = Engine::new(EngineOptions {
        break_even: BreakEven::never_inline(),
        backend: Some(Arc::new(PanickyBackend(Kernels::detect()))),
        ..EngineOptions::default()
    })
    .unwrap();
    let mut ch = engine.channel(Priority::NORMAL);
    let bad = ch.copy(vec![1u8; 13], vec![0u8; 13]).unwrap();
    let good = ch.copy(vec![2u8; 14], vec![0u8; 14]).unwrap();
    ch.submit();
    assert!(matches!(
        bad.wait().status,
        Err(CopyError::Backend {
            backend: "panicky",
            ..
        })
    ));
    assert_eq!(good.wait().into_result().unwrap().1, vec![2u8; 14]);
}
