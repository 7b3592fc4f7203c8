// zita_bench: the zita-convolver side of `scripts/compare_zita.sh`.
//
// It makes exactly the measurements `sluice bench convolve` makes, with the same method, so the
// two can be printed side by side as ratios:
//
//   offline       process as fast as possible (Convproc::process(true), i.e. wait for the
//                 partition threads like sluice's LatePolicy::Wait); real-time factor and the
//                 process CPU time (CLOCK_PROCESS_CPUTIME_ID, worker threads included) as % of one
//                 core per channel.
//   realtime      the callback is driven by a thread sleeping to absolute deadlines
//                 (clock_nanosleep TIMER_ABSTIME on CLOCK_MONOTONIC) every block/rate seconds;
//                 it copies the input in, calls process(false), copies the output out. A callback
//                 is late if it finished after its deadline (the next period start) or zita
//                 returned a lateness flag. Reports p50/p99/max callback time as % of the period.
//                 A callback woken only after its deadline is a host stall: reported as
//                 "stalled", counted as late only with --strict (as in sluice).
//   max-channels  the largest number of independent channels (one IR per channel, diagonal
//                 matrix) with zero late callbacks over S seconds: doubling, then bisection to
//                 within 1/32 of the count. A count passes if one of --attempts (default 3)
//                 fresh runs has no late callback (a guard against rare host stalls).
//                 Convproc has at most 64 inputs, so more channels use several Convprocs, all
//                 processed in the same callback.
//
// Configuration: quantum = minpart = block (zita needs minpart >= 64), maxpart = 8192 (zita's
// maximum), density = 1/channels, options OPT_FFTW_MEASURE | OPT_VECTOR_MODE | OPT_LATE_CONTIN
// (zita's fastest settings; LATE_CONTIN so it keeps running and reporting after 5 late cycles).
// Worker threads are started with SCHED_FIFO when permitted, else SCHED_OTHER, and their actual
// policy is read back from /proc/self/task/*/stat, because zita 4.0.3 ignores a failed
// pthread_create (the level then silently runs inline in the callback).
//
// Output: one JSON object per line on stdout per measured point; progress on stderr.

#include <zita-convolver.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <set>
#include <string>
#include <time.h>
#include <unistd.h>
#include <vector>

namespace {

struct Args {
    std::vector<std::string> modes{"offline", "realtime", "max-channels"};
    std::vector<uint32_t> ir_lens{1u << 14, 1u << 16, 1u << 18, 1u << 19};
    uint32_t block = 64;
    uint32_t rate = 48000;
    uint32_t channels = 8;
    double seconds = 3.0;
    uint32_t max_channels_limit = 1024;
    uint32_t attempts = 3;
    bool strict = false;
    bool no_fifo = false;
};

const int kDriverPriority = 80;  // the driver thread's SCHED_FIFO priority (same as sluice's)
const int kNoiseLen = 1 << 16;   // shared input noise buffer, channels read at different offsets

int64_t now_ns(clockid_t clock) {
    timespec ts;
    clock_gettime(clock, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void die(const std::string &msg) {
    fprintf(stderr, "zita_bench: error: %s\n", msg.c_str());
    exit(2);
}

std::vector<std::string> split(const std::string &s) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= s.size()) {
        size_t end = s.find(',', start);
        if (end == std::string::npos) end = s.size();
        if (end > start) out.push_back(s.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

uint32_t parse_u32(const std::string &flag, const std::string &v) {
    char *end = nullptr;
    unsigned long x = strtoul(v.c_str(), &end, 10);
    if (v.empty() || *end != 0 || x == 0 || x > 0xffffffffUL) die(flag + " needs a positive integer, got '" + v + "'");
    return uint32_t(x);
}

Args parse_args(int argc, char **argv) {
    Args a;
    bool quick = false;
    bool lens_given = false, seconds_given = false;
    for (int i = 1; i < argc; i++) {
        std::string f = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) die(f + " needs a value");
            return argv[++i];
        };
        if (f == "--modes") {
            a.modes = split(val());
            for (auto &m : a.modes)
                if (m != "offline" && m != "realtime" && m != "max-channels") die("unknown mode '" + m + "' (offline, realtime, max-channels)");
        } else if (f == "--ir-lens") {
            a.ir_lens.clear();
            for (auto &s : split(val())) a.ir_lens.push_back(parse_u32(f, s));
            lens_given = true;
        } else if (f == "--block") {
            a.block = parse_u32(f, val());
        } else if (f == "--rate") {
            a.rate = parse_u32(f, val());
        } else if (f == "--channels") {
            a.channels = parse_u32(f, val());
        } else if (f == "--seconds") {
            a.seconds = atof(val().c_str());
            if (!(a.seconds > 0)) die("--seconds needs a positive number");
            seconds_given = true;
        } else if (f == "--max-channels-limit") {
            a.max_channels_limit = parse_u32(f, val());
        } else if (f == "--attempts") {
            a.attempts = parse_u32(f, val());
        } else if (f == "--strict") {
            a.strict = true;
        } else if (f == "--quick") {
            quick = true;
        } else if (f == "--no-fifo") {
            a.no_fifo = true;
        } else if (f == "-h" || f == "--help") {
            printf("usage: zita_bench [--modes offline,realtime,max-channels] [--ir-lens 16384,65536,...]\n"
                   "                  [--block 64] [--rate 48000] [--channels 8] [--seconds 3]\n"
                   "                  [--max-channels-limit 1024] [--attempts 3] [--strict] [--quick] [--no-fifo]\n");
            exit(0);
        } else {
            die("unknown argument '" + f + "' (see --help)");
        }
    }
    if (quick) {
        if (!lens_given) a.ir_lens = {1u << 14, 1u << 16};
        if (!seconds_given) a.seconds = 1.0;
    }
    if (a.block < Convproc::MINQUANT || a.block > Convproc::MAXPART || (a.block & (a.block - 1)))
        die("--block must be a power of two from 16 to 8192");
    return a;
}

// Deterministic test signals: xorshift32 noise, the IR decaying by 60 dB over its length.
struct Rng {
    uint32_t s;
    float next() {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        return float(s) / 2147483648.0f - 1.0f;
    }
};

std::vector<float> make_ir(uint32_t len) {
    Rng r{0x1234567u};
    std::vector<float> ir(len);
    for (uint32_t i = 0; i < len; i++) ir[i] = r.next() * std::pow(10.0f, -3.0f * float(i) / float(len)) * 0.1f;
    return ir;
}

std::vector<float> make_noise() {
    Rng r{0x9e3779b9u};
    std::vector<float> x(kNoiseLen);
    for (auto &v : x) v = r.next() * 0.1f;
    return x;
}

bool set_fifo(pthread_t t, int prio) {
    sched_param p{};
    p.sched_priority = prio;
    return pthread_setschedparam(t, SCHED_FIFO, &p) == 0;
}

bool fifo_permitted() {
    // Probe on a throwaway thread so the caller's own policy is left alone.
    pthread_t t;
    pthread_attr_t attr;
    sched_param p{};
    p.sched_priority = 1;
    pthread_attr_init(&attr);
    pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
    pthread_attr_setschedparam(&attr, &p);
    pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
    int rc = pthread_create(&t, &attr, [](void *) -> void * { return nullptr; }, nullptr);
    pthread_attr_destroy(&attr);
    if (rc != 0) return false;
    pthread_join(t, nullptr);
    return true;
}

// The tids of this process's threads.
std::set<int> task_ids() {
    std::set<int> ids;
    DIR *d = opendir("/proc/self/task");
    if (!d) return ids;
    while (dirent *e = readdir(d)) {
        if (e->d_name[0] != '.') ids.insert(atoi(e->d_name));
    }
    closedir(d);
    return ids;
}

// (policy, rt_priority) of one thread, from /proc/self/task/TID/stat fields 41 and 40.
bool thread_sched(int tid, int *policy, int *prio) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char buf[2048];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p) return false;
    // Field 3 starts after ") "; fields 40 and 41 are rt_priority and policy.
    int field = 2;
    char *tok = strtok(p + 1, " ");
    long rt = -1, pol = -1;
    while (tok) {
        field++;
        if (field == 40) rt = atol(tok);
        if (field == 41) { pol = atol(tok); break; }
        tok = strtok(nullptr, " ");
    }
    if (pol < 0) return false;
    *policy = int(pol);
    *prio = int(rt);
    return true;
}

// A bank of Convprocs carrying `channels` independent channels (at most 64 per Convproc).
struct Bank {
    std::vector<Convproc *> procs;
    uint32_t channels = 0;
    std::string workers;      // e.g. "6 threads SCHED_FIFO prio 71..79"
    bool workers_fifo = false;
    int worker_threads = 0;
    int worker_threads_fifo = 0;
};

void destroy(Bank &b) {
    for (auto *p : b.procs) {
        p->stop_process();
        while (!p->check_stop()) usleep(1000);
        p->cleanup();
        delete p;
    }
    b.procs.clear();
}

Bank build(const Args &a, uint32_t channels, const std::vector<float> &ir, bool fifo) {
    Bank b;
    b.channels = channels;
    uint32_t minpart = std::max<uint32_t>(a.block, Convproc::MINPART);
    std::set<int> before = task_ids();
    for (uint32_t done = 0; done < channels;) {
        uint32_t n = std::min<uint32_t>(channels - done, Convproc::MAXINP);
        auto *p = new Convproc();
        p->set_options(Convproc::OPT_FFTW_MEASURE | Convproc::OPT_VECTOR_MODE | Convproc::OPT_LATE_CONTIN);
        int rc = p->configure(n, n, uint32_t(ir.size()), a.block, minpart, Convproc::MAXPART, 1.0f / float(n));
        if (rc) die("Convproc::configure failed (" + std::to_string(rc) + ")");
        for (uint32_t c = 0; c < n; c++) {
            rc = p->impdata_create(c, c, 1, const_cast<float *>(ir.data()), 0, int32_t(ir.size()));
            if (rc) die("Convproc::impdata_create failed (" + std::to_string(rc) + ")");
        }
        rc = fifo ? p->start_process(kDriverPriority - 1, SCHED_FIFO) : p->start_process(0, SCHED_OTHER);
        if (rc) die("Convproc::start_process failed (" + std::to_string(rc) + ")");
        b.procs.push_back(p);
        done += n;
    }
    // The level threads set their state when they run; give them a moment to exist.
    usleep(20000);
    int lo = 1000, hi = -1;
    for (int tid : task_ids()) {
        if (before.count(tid)) continue;
        int pol = -1, prio = -1;
        if (!thread_sched(tid, &pol, &prio)) continue;
        b.worker_threads++;
        if (pol == SCHED_FIFO) {
            b.worker_threads_fifo++;
            lo = std::min(lo, prio);
            hi = std::max(hi, prio);
        }
    }
    b.workers_fifo = b.worker_threads > 0 && b.worker_threads_fifo == b.worker_threads;
    char buf[160];
    if (b.worker_threads_fifo > 0)
        snprintf(buf, sizeof buf, "%d threads, %d SCHED_FIFO prio %d..%d", b.worker_threads, b.worker_threads_fifo, lo, hi);
    else
        snprintf(buf, sizeof buf, "%d threads, SCHED_OTHER", b.worker_threads);
    b.workers = buf;
    return b;
}

// One callback: copy each channel's input in, process(false or true), copy the outputs out.
// Returns zita's flags (non-zero: some level was late).
struct Io {
    const std::vector<float> *noise;
    std::vector<std::vector<float>> out;
    uint64_t block_index = 0;
};

int callback(Bank &b, Io &io, uint32_t block, bool sync) {
    const float *noise = io.noise->data();
    uint64_t pos = (io.block_index * block) % kNoiseLen;
    uint32_t ch = 0;
    for (auto *p : b.procs) {
        uint32_t n = std::min<uint32_t>(b.channels - ch, Convproc::MAXINP);
        for (uint32_t j = 0; j < n; j++, ch++) {
            // Channel c reads the noise at its own offset (kNoiseLen is a multiple of the block).
            uint64_t off = (pos + uint64_t(ch) * 977 * block) % kNoiseLen;
            memcpy(p->inpdata(j), noise + off, block * sizeof(float));
        }
    }
    int flags = 0;
    for (auto *p : b.procs) flags |= p->process(sync);
    ch = 0;
    for (auto *p : b.procs) {
        uint32_t n = std::min<uint32_t>(b.channels - ch, Convproc::MAXINP);
        for (uint32_t j = 0; j < n; j++, ch++) memcpy(io.out[ch].data(), p->outdata(j), block * sizeof(float));
    }
    io.block_index++;
    return flags;
}

Io make_io(const std::vector<float> &noise, uint32_t channels, uint32_t block) {
    Io io;
    io.noise = &noise;
    io.out.assign(channels, std::vector<float>(block, 0.0f));
    return io;
}

void timespec_add(timespec &t, int64_t ns) {
    t.tv_nsec += ns;
    while (t.tv_nsec >= 1000000000) {
        t.tv_nsec -= 1000000000;
        t.tv_sec++;
    }
}

int64_t ts_ns(const timespec &t) { return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec; }

struct RtResult {
    uint64_t callbacks = 0;
    uint64_t late = 0;
    uint64_t late_deadline = 0;
    uint64_t late_engine = 0;
    uint64_t stalled = 0;
    double p50 = 0, p99 = 0, max = 0;  // callback time, % of period
    double cpu_pct_per_channel = 0;
    bool driver_fifo = false;  // the driver thread ran SCHED_FIFO
};

// The real-time driver loop, shared by `realtime` and `max-channels`. The first 0.25 s are a
// warm-up and are not counted. With stop_on_late it returns at the first late callback.
RtResult run_realtime(const Args &a, Bank &b, Io &io, double seconds, bool stop_on_late, bool fifo) {
    const int64_t period = int64_t(a.block) * 1000000000 / a.rate;
    const uint64_t warmup = uint64_t(0.25 * a.rate / a.block);
    const uint64_t measured = std::max<uint64_t>(1, uint64_t(seconds * a.rate / a.block));
    std::vector<double> durations;
    durations.reserve(measured);
    RtResult r;
    r.driver_fifo = fifo && set_fifo(pthread_self(), kDriverPriority);
    timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    timespec_add(next, period);
    int64_t cpu0 = 0, wall0 = 0;
    for (uint64_t i = 0; i < warmup + measured; i++) {
        if (i == warmup) {
            cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
            wall0 = now_ns(CLOCK_MONOTONIC);
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr) == EINTR) {
        }
        int64_t t0 = now_ns(CLOCK_MONOTONIC);
        int flags = callback(b, io, a.block, false);
        int64_t t1 = now_ns(CLOCK_MONOTONIC);
        int64_t deadline = ts_ns(next) + period;
        timespec_add(next, period);
        if (i < warmup) continue;
        r.callbacks++;
        durations.push_back(double(t1 - t0) * 100.0 / double(period));
        // Woken after its deadline: the host stalled the driver, the engine had no chance.
        bool stalled = t0 > deadline;
        r.stalled += stalled;
        bool late_d = stalled ? a.strict : t1 > deadline;
        bool late_e = flags != 0;
        r.late_deadline += late_d;
        r.late_engine += late_e;
        if (late_d || late_e) {
            r.late++;
            if (stop_on_late) break;
        }
    }
    int64_t cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    int64_t wall = now_ns(CLOCK_MONOTONIC) - wall0;
    if (r.driver_fifo) {
        sched_param p{};
        pthread_setschedparam(pthread_self(), SCHED_OTHER, &p);
    }
    r.cpu_pct_per_channel = double(cpu) * 100.0 / double(wall) / double(b.channels);
    std::sort(durations.begin(), durations.end());
    if (!durations.empty()) {
        auto pct = [&](double q) { return durations[std::min(durations.size() - 1, size_t(q * double(durations.size() - 1) + 0.5))]; };
        r.p50 = pct(0.5);
        r.p99 = pct(0.99);
        r.max = durations.back();
    }
    return r;
}

void print_common(const Args &a, const char *mode, uint32_t ir_len, uint32_t channels) {
    printf("{\"engine\":\"zita\",\"mode\":\"%s\",\"ir_len\":%u,\"block\":%u,\"rate\":%u,\"channels\":%u,\"seconds\":%g",
           mode, ir_len, a.block, a.rate, channels, a.seconds);
}

void offline(const Args &a, const std::vector<float> &ir, const std::vector<float> &noise, bool fifo) {
    Bank b = build(a, a.channels, ir, fifo);
    Io io = make_io(noise, a.channels, a.block);
    // Warm up for 10% of the time, then process blocks until `seconds` of wall time have passed.
    int64_t t_end = now_ns(CLOCK_MONOTONIC) + int64_t(a.seconds * 0.1e9);
    while (now_ns(CLOCK_MONOTONIC) < t_end)
        for (int k = 0; k < 64; k++) callback(b, io, a.block, true);
    uint64_t blocks = 0;
    int64_t cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID), wall0 = now_ns(CLOCK_MONOTONIC);
    t_end = wall0 + int64_t(a.seconds * 1e9);
    int64_t wall = 0;
    uint64_t late = 0;
    do {
        for (int k = 0; k < 64; k++) late += callback(b, io, a.block, true) != 0;
        blocks += 64;
        wall = now_ns(CLOCK_MONOTONIC) - wall0;
    } while (wall0 + wall < t_end);
    int64_t cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    double audio_s = double(blocks) * a.block / a.rate;
    double rtf = audio_s / (double(wall) * 1e-9);
    double cpu_pct = double(cpu) * 1e-9 / audio_s / a.channels * 100.0;
    print_common(a, "offline", uint32_t(ir.size()), a.channels);
    printf(",\"audio_seconds\":%.3f,\"rtf\":%.2f,\"cpu_pct_per_channel\":%.4f,\"late\":%llu,\"realtime_granted\":%s,\"workers\":\"%s\"}\n",
           audio_s, rtf, cpu_pct, (unsigned long long)late, b.workers_fifo ? "true" : "false", b.workers.c_str());
    fflush(stdout);
    fprintf(stderr, "zita offline   ir %7u: rtf %8.1f, cpu/ch %.3f%% (%s)\n", unsigned(ir.size()), rtf, cpu_pct, b.workers.c_str());
    destroy(b);
}

void realtime(const Args &a, const std::vector<float> &ir, const std::vector<float> &noise, bool fifo) {
    Bank b = build(a, a.channels, ir, fifo);
    Io io = make_io(noise, a.channels, a.block);
    RtResult r = run_realtime(a, b, io, a.seconds, false, fifo);
    print_common(a, "realtime", uint32_t(ir.size()), a.channels);
    printf(",\"callbacks\":%llu,\"late\":%llu,\"late_deadline\":%llu,\"late_engine\":%llu,\"p50_pct\":%.2f,\"p99_pct\":%.2f,"
           "\"max_pct\":%.2f,\"stalled\":%llu,\"cpu_pct_per_channel\":%.4f,\"driver_fifo\":%s,\"realtime_granted\":%s,\"workers\":\"%s\"}\n",
           (unsigned long long)r.callbacks, (unsigned long long)r.late, (unsigned long long)r.late_deadline,
           (unsigned long long)r.late_engine, r.p50, r.p99, r.max, (unsigned long long)r.stalled, r.cpu_pct_per_channel, r.driver_fifo ? "true" : "false",
           b.workers_fifo ? "true" : "false", b.workers.c_str());
    fflush(stdout);
    fprintf(stderr, "zita realtime  ir %7u: late %llu/%llu, p50 %.1f%% p99 %.1f%% max %.1f%% of period (%s)\n",
            unsigned(ir.size()), (unsigned long long)r.late, (unsigned long long)r.callbacks, r.p50, r.p99, r.max,
            b.workers.c_str());
    destroy(b);
}

void max_channels(const Args &a, const std::vector<float> &ir, const std::vector<float> &noise, bool fifo) {
    bool driver_fifo = false;
    std::string trials;  // [channels, ok, late past deadline, late flags] per attempt
    std::string workers;
    bool all_fifo = true;
    auto trial = [&](uint32_t n) {
        bool ok = false;
        for (uint32_t attempt = 1; attempt <= a.attempts && !ok; attempt++) {
            Bank b = build(a, n, ir, fifo);
            Io io = make_io(noise, n, a.block);
            RtResult r = run_realtime(a, b, io, a.seconds, true, fifo);
            driver_fifo = driver_fifo || r.driver_fifo;
            ok = r.late == 0;
            all_fifo = all_fifo && b.workers_fifo;
            workers = b.workers;
            if (ok) {
                fprintf(stderr, "zita max-ch    ir %7u: %4u channels, attempt %u: ok (p99 %.1f%% max %.1f%%, %s)\n",
                        unsigned(ir.size()), n, attempt, r.p99, r.max, b.workers.c_str());
            } else {
                fprintf(stderr,
                        "zita max-ch    ir %7u: %4u channels, attempt %u: LATE after %.2f s (%llu past deadline, "
                        "%llu engine late flags, %llu stalled) (p99 %.1f%% max %.1f%%, %s)\n",
                        unsigned(ir.size()), n, attempt, double(r.callbacks) * a.block / a.rate,
                        (unsigned long long)r.late_deadline, (unsigned long long)r.late_engine,
                        (unsigned long long)r.stalled, r.p99, r.max,
                        b.workers.c_str());
            }
            trials += (trials.empty() ? "" : ",") + std::string("[") + std::to_string(n) + "," +
                      (ok ? "true" : "false") + "," + std::to_string(r.late_deadline) + "," +
                      std::to_string(r.late_engine) + "]";
            destroy(b);
        }
        return ok;
    };
    uint32_t good = 0, bad = 0;
    for (uint32_t n = 1; n <= a.max_channels_limit; n *= 2) {
        if (trial(n)) {
            good = n;
        } else {
            bad = n;
            break;
        }
    }
    if (bad == 0 && good < a.max_channels_limit) {
        // Doubling stopped below the limit without a failure: check the limit itself.
        if (trial(a.max_channels_limit)) good = a.max_channels_limit;
        else bad = a.max_channels_limit;
    }
    // Bisect to 1/32 of the count (the edge is noisy; finer steps only measure the noise).
    while (bad != 0 && bad - good > std::max<uint32_t>(1, good / 32)) {
        uint32_t mid = good + (bad - good) / 2;
        if (trial(mid)) good = mid;
        else bad = mid;
    }
    print_common(a, "max-channels", uint32_t(ir.size()), good);
    printf(",\"max_channels\":%u,\"limit\":%u,\"driver_fifo\":%s,\"realtime_granted\":%s,\"workers\":\"%s\",\"trials\":[%s]}\n",
           good, a.max_channels_limit, driver_fifo ? "true" : "false", all_fifo ? "true" : "false", workers.c_str(),
           trials.c_str());
    fflush(stdout);
}

}  // namespace

int main(int argc, char **argv) {
    Args a = parse_args(argc, argv);
    bool fifo = !a.no_fifo && fifo_permitted();
    if (!fifo) fprintf(stderr, "zita_bench: SCHED_FIFO not permitted (or --no-fifo): zita's threads run SCHED_OTHER\n");
    fprintf(stderr, "zita_bench: zita-convolver %d.%d, block %u, %u Hz, %u channels, %g s per point\n",
            zita_convolver_major_version(), zita_convolver_minor_version(), a.block, a.rate, a.channels, a.seconds);
    std::vector<float> noise = make_noise();
    for (uint32_t len : a.ir_lens) {
        std::vector<float> ir = make_ir(len);
        for (auto &m : a.modes) {
            if (m == "offline") {
                offline(a, ir, noise, fifo);
            } else if (m == "realtime") {
                realtime(a, ir, noise, fifo);
            } else {
                max_channels(a, ir, noise, fifo);
            }
        }
    }
    return 0;
}
