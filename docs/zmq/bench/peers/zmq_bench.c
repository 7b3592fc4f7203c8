/* libzmq peer for `sluice bench net`: the same measurements sluice makes, through libzmq's C
 * API. Compiled at run time by the bench (`cc -O2 zmq_bench.c -lzmq`, Debian's libzmq3-dev);
 * nothing links libzmq into the sluice workspace.
 *
 *   zmq_bench push ENDPOINT SIZE COUNT    PUSH connects, sends COUNT messages of SIZE bytes
 *                                         without copying them (zmq_msg_init_data over one
 *                                         constant buffer, no free function)
 *   zmq_bench pull ENDPOINT SIZE COUNT    PULL binds, receives COUNT messages (zmq_msg_t)
 *   zmq_bench pullcopy ENDPOINT SIZE COUNT
 *                                         as pull, and copies each message into a 64 MiB
 *                                         ring (what a gr-zeromq source does: memcpy from
 *                                         the zmq_msg_t into its output buffer)
 *   zmq_bench req  ENDPOINT SIZE COUNT [FILE]
 *                                         REQ connects, COUNT round trips, one at a time;
 *                                         the timed round trips (µs, sorted) go to FILE
 *   zmq_bench rep  ENDPOINT SIZE COUNT    REP binds, answers COUNT requests with each message
 *
 * ENDPOINT is a tcp:// address; a binding end may use port `*` and prints the endpoint it got
 * as its first line (`endpoint tcp://127.0.0.1:PORT`). At the end every role prints one line of
 * JSON: its CPU seconds (getrusage RUSAGE_SELF after zmq_ctx_term, which for push waits until
 * every message left: the calling thread and libzmq's I/O thread) and its measurements. pull: seconds from the first message to the last (`secs`); req: round
 * trip mean/p50/p99/max in microseconds, each timed with CLOCK_MONOTONIC around one
 * zmq_send + zmq_recv pair. Every message carries its sequence number in its first 8 bytes
 * (when SIZE >= 8) and the receiving end checks it: a wrong one is an error (exit 3). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <zmq.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu_s(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec * 1e-6 +
           (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec * 1e-6;
}

static void die(const char *what) {
    fprintf(stderr, "zmq_bench: %s: %s\n", what, zmq_strerror(zmq_errno()));
    exit(2);
}

/* The closing line, printed after zmq_ctx_term with the CPU time then. */
static char result[512];

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void stamp(unsigned char *buf, size_t size, uint64_t seq) {
    if (size >= 8)
        memcpy(buf, &seq, 8);
}

static void check(const void *data, size_t got, size_t size, uint64_t seq) {
    uint64_t v;
    if (got != size) {
        fprintf(stderr, "zmq_bench: message %llu has %zu bytes, expected %zu\n",
                (unsigned long long)seq, got, size);
        exit(3);
    }
    if (size >= 8) {
        memcpy(&v, data, 8);
        if (v != seq) {
            fprintf(stderr, "zmq_bench: message %llu carries sequence %llu\n",
                    (unsigned long long)seq, (unsigned long long)v);
            exit(3);
        }
    }
}

static void *open_socket(void *ctx, int type, const char *endpoint, int bind) {
    void *s = zmq_socket(ctx, type);
    /* A sender waits at zmq_ctx_term until every message left (linger -1); the others drop. */
    int linger = type == ZMQ_PUSH ? -1 : 0, hwm = 1000;
    if (!s)
        die("zmq_socket");
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm);
    if (bind) {
        char got[256];
        size_t len = sizeof got;
        if (zmq_bind(s, endpoint) != 0)
            die("zmq_bind");
        if (zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, got, &len) != 0)
            die("ZMQ_LAST_ENDPOINT");
        printf("endpoint %s\n", got);
        fflush(stdout);
    } else if (zmq_connect(s, endpoint) != 0) {
        die("zmq_connect");
    }
    return s;
}

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: zmq_bench push|pull|pullcopy|req|rep ENDPOINT SIZE COUNT [RTT_FILE]\n");
        return 1;
    }
    const char *role = argv[1], *endpoint = argv[2];
    size_t size = strtoull(argv[3], NULL, 10);
    uint64_t count = strtoull(argv[4], NULL, 10);
    void *ctx = zmq_ctx_new();
    unsigned char *buf = calloc(size ? size : 1, 1);
    zmq_msg_t msg;
    if (!ctx || !buf)
        die("setup");

    if (!strcmp(role, "push")) {
        void *s = open_socket(ctx, ZMQ_PUSH, endpoint, 0);
        for (uint64_t i = 0; i < count; i++) {
            /* Zero copy: the message points at `buf` (constant data: no free function), so
             * its bytes must not change while libzmq may still send them: push messages
             * carry no sequence number (pull checks their size and zero bytes). */
            if (zmq_msg_init_data(&msg, buf, size, NULL, NULL) != 0)
                die("zmq_msg_init_data");
            if (zmq_msg_send(&msg, s, 0) < 0)
                die("zmq_msg_send");
        }
        zmq_close(s);
        snprintf(result, sizeof result, "\"role\":\"push\"");
    } else if (!strcmp(role, "pull") || !strcmp(role, "pullcopy")) {
        void *s = open_socket(ctx, ZMQ_PULL, endpoint, 1);
        double t0 = 0, t1 = 0;
        uint64_t bytes = 0;
        size_t ring_len = (size_t)64 << 20, at = 0;
        unsigned char *ring = NULL;
        if (!strcmp(role, "pullcopy") && !(ring = calloc(ring_len, 1)))
            die("calloc");
        for (uint64_t i = 0; i < count; i++) {
            zmq_msg_init(&msg);
            if (zmq_msg_recv(&msg, s, 0) < 0)
                die("zmq_msg_recv");
            if (i == 0)
                t0 = now_s();
            check(zmq_msg_data(&msg), zmq_msg_size(&msg), size, 0);
            if (ring) {
                size_t n = zmq_msg_size(&msg);
                if (at + n > ring_len)
                    at = 0;
                if (n <= ring_len)
                    memcpy(ring + at, zmq_msg_data(&msg), n);
                at += n;
            }
            bytes += zmq_msg_size(&msg);
            zmq_msg_close(&msg);
        }
        t1 = now_s();
        zmq_close(s);
        /* Timed from the first message to the last: `timed_messages` is count - 1. */
        snprintf(result, sizeof result,
                 "\"role\":\"%s\",\"secs\":%.9f,\"timed_messages\":%llu,\"bytes\":%llu",
                 role, t1 - t0, (unsigned long long)(count - 1), (unsigned long long)bytes);
    } else if (!strcmp(role, "req") || !strcmp(role, "rep")) {
        int req = !strcmp(role, "req");
        void *s = open_socket(ctx, req ? ZMQ_REQ : ZMQ_REP, endpoint, !req);
        double *rtt = req ? malloc(sizeof(double) * (count ? count : 1)) : NULL;
        unsigned char *in = malloc(size ? size : 1);
        if (req && !rtt)
            die("malloc");
        for (uint64_t i = 0; i < count; i++) {
            if (req) {
                stamp(buf, size, i);
                double t0 = now_s();
                if (zmq_send(s, buf, size, 0) < 0)
                    die("zmq_send");
                int n = zmq_recv(s, in, size, 0);
                double t1 = now_s();
                if (n < 0)
                    die("zmq_recv");
                check(in, (size_t)n, size, i);
                rtt[i] = (t1 - t0) * 1e6;
            } else {
                int n = zmq_recv(s, in, size, 0);
                if (n < 0)
                    die("zmq_recv");
                check(in, (size_t)n, size, i);
                if (zmq_send(s, in, (size_t)n, 0) < 0)
                    die("zmq_send");
            }
        }
        zmq_close(s);
        if (req) {
            double sum = 0;
            /* The first 1 % (at least one) warm the connection up and are not counted. */
            uint64_t skip = count / 100 ? count / 100 : 1, n = count > skip ? count - skip : 0;
            double *v = rtt + skip;
            for (uint64_t i = 0; i < n; i++)
                sum += v[i];
            qsort(v, n, sizeof(double), cmp_double);
            if (argc == 6) {
                FILE *f = fopen(argv[5], "w");
                if (!f) {
                    perror(argv[5]);
                    return 2;
                }
                for (uint64_t i = 0; i < n; i++)
                    fprintf(f, "%.3f\n", v[i]);
                fclose(f);
            }
            snprintf(result, sizeof result,
                     "\"role\":\"req\",\"round_trips\":%llu,\"mean_us\":%.3f,"
                     "\"p50_us\":%.3f,\"p99_us\":%.3f,\"max_us\":%.3f",
                     (unsigned long long)n, n ? sum / n : 0.0, n ? v[n / 2] : 0.0,
                     n ? v[(n * 99) / 100] : 0.0, n ? v[n - 1] : 0.0);
        } else {
            snprintf(result, sizeof result, "\"role\":\"rep\"");
        }
    } else {
        fprintf(stderr, "zmq_bench: unknown role '%s'\n", role);
        return 1;
    }
    zmq_ctx_term(ctx);
    printf("{%s,\"cpu_s\":%.6f}\n", result, cpu_s());
    return 0;
}
