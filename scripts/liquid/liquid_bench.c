/* liquid-dsp peers of `sluice bench radio`: one case per run, single-threaded, timed around the
 * processing loop only. Prints one JSON document on stdout:
 *   {"case": ..., "items": N, "items_per_s": [input items/s per run], "version": "..."}
 *
 * Cases (input: a fixed 2^16-sample complex noise table, read cyclically in blocks):
 *   channelizer   firpfbch_crcf analyzer, M channels, P taps per branch (prototype: --taps-file
 *                 of M*P raw f32, or liquid's Kaiser design), one M-sample block per call
 *   channelizer2  firpfbch2_crcf analyzer (2x oversampled), M/2 samples per call, m = P/2
 *   fm            freqdem_demodulate_block
 *   fir           firfilt_crcf_execute_block with T taps
 *   rational      rresamp_crcf I/D with T taps per phase (filter length I*T)
 *   arb           resamp_crcf at --rate (m = 13, 32 filters)
 *
 * Build: cc -O2 -o liquid_bench liquid_bench.c -lliquid -lm  (Debian: libliquid-dev)
 */
#include <complex.h>
#include <liquid/liquid.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TABLE 65536

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static float *read_taps(const char *path, unsigned want) {
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "cannot open %s\n", path); exit(1); }
    float *h = malloc(sizeof(float) * want);
    if (fread(h, sizeof(float), want, f) != want) {
        fprintf(stderr, "%s: fewer than %u taps\n", path, want);
        exit(1);
    }
    fclose(f);
    return h;
}

static void usage(void) {
    fprintf(stderr, "usage: liquid_bench --case channelizer|channelizer2|fm|fir|rational|arb "
                    "[--items N] [--runs R] [--channels M] [--taps P] [--taps-file F] "
                    "[--interp I --decim D] [--rate R]\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *which = NULL, *taps_file = NULL;
    unsigned long items = 20000000;
    unsigned runs = 3, M = 512, P = 18, interp = 3, decim = 2;
    double rate = 1.37;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--case")) which = v;
        else if (!strcmp(k, "--items")) items = strtoul(v, NULL, 10);
        else if (!strcmp(k, "--runs")) runs = (unsigned)atoi(v);
        else if (!strcmp(k, "--channels")) M = (unsigned)atoi(v);
        else if (!strcmp(k, "--taps")) P = (unsigned)atoi(v);
        else if (!strcmp(k, "--taps-file")) taps_file = v;
        else if (!strcmp(k, "--interp")) interp = (unsigned)atoi(v);
        else if (!strcmp(k, "--decim")) decim = (unsigned)atoi(v);
        else if (!strcmp(k, "--rate")) rate = atof(v);
        else usage();
    }
    if (!which || runs == 0 || M < 2 || P < 1) usage();
    static float complex table[TABLE];
    unsigned s = 12345;
    for (int i = 0; i < TABLE; i++) {
        s ^= s << 13; s ^= s >> 17; s ^= s << 5;
        float re = (float)(s & 0xffff) / 65536.0f - 0.5f;
        s ^= s << 13; s ^= s >> 17; s ^= s << 5;
        float im = (float)(s & 0xffff) / 65536.0f - 0.5f;
        table[i] = re + im * _Complex_I;
    }
    float complex *out = malloc(sizeof(float complex) * (8 * TABLE + 4 * M + 64));
    float *fout = malloc(sizeof(float) * 8 * TABLE);
    double rates[64];
    if (runs > 64) runs = 64;
    double sink = 0;
    for (unsigned r = 0; r < runs; r++) {
        unsigned long done = 0;
        double t0 = 0, t1 = 0;
        if (!strcmp(which, "channelizer")) {
            float *h = taps_file ? read_taps(taps_file, M * P) : NULL;
            firpfbch_crcf q = h ? firpfbch_crcf_create(LIQUID_ANALYZER, M, P, h)
                                : firpfbch_crcf_create_kaiser(LIQUID_ANALYZER, M, P / 2, 80.0f);
            unsigned pos = 0;
            t0 = now();
            while (done < items) {
                if (pos + M > TABLE) pos = 0;
                firpfbch_crcf_analyzer_execute(q, table + pos, out);
                sink += crealf(out[1]);
                pos += M;
                done += M;
            }
            t1 = now();
            firpfbch_crcf_destroy(q);
            free(h);
        } else if (!strcmp(which, "channelizer2")) {
            float *h = taps_file ? read_taps(taps_file, M * P) : NULL;
            firpfbch2_crcf q = h ? firpfbch2_crcf_create(LIQUID_ANALYZER, M, P / 2, h)
                                 : firpfbch2_crcf_create_kaiser(LIQUID_ANALYZER, M, P / 2, 80.0f);
            unsigned pos = 0;
            t0 = now();
            while (done < items) {
                if (pos + M / 2 > TABLE) pos = 0;
                firpfbch2_crcf_execute(q, table + pos, out);
                sink += crealf(out[1]);
                pos += M / 2;
                done += M / 2;
            }
            t1 = now();
            firpfbch2_crcf_destroy(q);
            free(h);
        } else if (!strcmp(which, "fm")) {
            freqdem q = freqdem_create(0.5f);
            t0 = now();
            while (done < items) {
                freqdem_demodulate_block(q, table, TABLE, fout);
                sink += fout[7];
                done += TABLE;
            }
            t1 = now();
            freqdem_destroy(q);
        } else if (!strcmp(which, "fir")) {
            float *h = malloc(sizeof(float) * P);
            for (unsigned k = 0; k < P; k++) h[k] = sinf(0.1f * k) / P;
            firfilt_crcf q = firfilt_crcf_create(h, P);
            t0 = now();
            while (done < items) {
                firfilt_crcf_execute_block(q, table, TABLE, out);
                sink += crealf(out[9]);
                done += TABLE;
            }
            t1 = now();
            firfilt_crcf_destroy(q);
            free(h);
        } else if (!strcmp(which, "rational")) {
            /* rresamp's filter has 2*I*m taps: P taps per phase means m = P/2. */
            float *h = malloc(sizeof(float) * interp * P);
            for (unsigned k = 0; k < interp * P; k++) h[k] = sinf(0.1f * k) / P;
            rresamp_crcf q = rresamp_crcf_create(interp, decim, P / 2, h);
            unsigned blocks = TABLE / decim;
            t0 = now();
            while (done < items) {
                rresamp_crcf_execute_block(q, table, blocks, out);
                sink += crealf(out[3]);
                done += (unsigned long)blocks * decim;
            }
            t1 = now();
            rresamp_crcf_destroy(q);
            free(h);
        } else if (!strcmp(which, "arb")) {
            resamp_crcf q = resamp_crcf_create(rate, 13, 0.45f, 60.0f, 32);
            unsigned ny = 0;
            t0 = now();
            while (done < items) {
                resamp_crcf_execute_block(q, table, 4096, out, &ny);
                sink += crealf(out[0]);
                done += 4096;
            }
            t1 = now();
            resamp_crcf_destroy(q);
        } else {
            usage();
        }
        rates[r] = done / (t1 - t0);
    }
    printf("{\"case\": \"%s\", \"items\": %lu, \"items_per_s\": [", which, items);
    for (unsigned r = 0; r < runs; r++) printf("%s%.6g", r ? ", " : "", rates[r]);
    printf("], \"version\": \"%s\", \"checksum\": %g}\n", liquid_libversion(), sink);
    free(out);
    free(fout);
    return 0;
}
