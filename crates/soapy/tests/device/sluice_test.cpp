// A SoapySDR device module for sluice's tests: `driver=sluice_test`.
//
// It behaves as a real device does for any SoapySDR client (sluice, GNU Radio's gr-soapy,
// SoapySDRUtil), and every sample it produces is known in advance, so a test can check each one:
//
//   signal    channel c, sample k (k counts from 0 at activateStream):
//               counter (default): I = k and Q = c, in the stream format's integers
//                         (wrapping: k mod 2^16 as int16 for CS16, k mod 256 for CS8/CU8,
//                         k mod 2^24 for CF32, exact in f32)
//               tone:     0.5 * exp(2 pi j * tone * k / rate), scaled to the format's range
//   time      sample k is at time_ns + k * 1e9 / rate (hardware time, SOAPY_SDR_HAS_TIME)
//   overflow  overflow=K1:N1;K2:N2 drops samples [K, K+N) of every channel: the read that
//             reaches K returns SOAPY_SDR_OVERFLOW, the next one starts at K+N with its time
//   pace      pace=1 delivers samples no faster than the sample rate (wall clock)
//   buffer    with pace=1, rt_buffer=N holds N samples as a radio's FIFO does: a reader more
//             than N samples behind the wall clock loses the oldest (the read returns
//             SOAPY_SDR_OVERFLOW, the next one starts N samples behind the clock, with its
//             time). Without it (the default) a late reader loses nothing.
//   channels  rx_channels=N RX channels (1..4), all reading the same k: time-aligned
//   TX        one TX channel; every writeStream call is logged to tx_log=PATH (text: one
//             "write <n> <flags> <timeNs>" line per call) and its CF32 samples appended to
//             PATH.cf32; a timed write earlier than the end of what was already sent is late
//             (SOAPY_SDR_TIME_ERROR from readStreamStatus) and a timed write that leaves a
//             hole inside an open burst is an underflow (SOAPY_SDR_UNDERFLOW).
//
// Settings with ranges, as a real front end has them: frequency 24 MHz .. 1.766 GHz, gain
// elements LNA 0..30 dB (step 1) and VGA 0..40 dB (step 2), sample rates 250 kHz .. 3.2 MHz
// (ranges as an RTL-SDR's, plus a list), bandwidth 200 kHz .. 8 MHz, antennas RX and CAL, AGC,
// frequency correction (ppm), DC offset and IQ balance modes. A value outside its range is a
// std::runtime_error naming the range (the C API turns it into an error code and a message).

#include <SoapySDR/Device.hpp>
#include <SoapySDR/Registry.hpp>
#include <SoapySDR/Formats.hpp>
#include <SoapySDR/Errors.hpp>
#include <SoapySDR/Time.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

const double MIN_FREQ = 24e6, MAX_FREQ = 1.766e9;

std::string arg(const SoapySDR::Kwargs &args, const std::string &key, const std::string &dflt)
{
    auto it = args.find(key);
    return it == args.end() ? dflt : it->second;
}

std::string range_text(double lo, double hi)
{
    std::ostringstream s;
    s << lo << " .. " << hi;
    return s.str();
}

struct RxStream
{
    std::string format;
    std::vector<size_t> channels;
};

struct TxStream
{
    std::string format;
};

class SluiceTest : public SoapySDR::Device
{
public:
    explicit SluiceTest(const SoapySDR::Kwargs &args)
        : rx_channels(std::stoul(arg(args, "rx_channels", "1"))),
          time0(std::stoll(arg(args, "time_ns", "1000000000000"))),
          pace(arg(args, "pace", "0") == "1"),
          rt_buffer(std::stoull(arg(args, "rt_buffer", "0"))),
          tone_signal(arg(args, "signal", "counter") == "tone"),
          tone(std::stod(arg(args, "tone", "10000"))),
          tx_log(arg(args, "tx_log", ""))
    {
        if (rx_channels < 1 || rx_channels > 4)
            throw std::runtime_error("sluice_test: rx_channels must be 1 .. 4");
        std::string sig = arg(args, "signal", "counter");
        if (sig != "counter" && sig != "tone")
            throw std::runtime_error("sluice_test: signal must be counter or tone, not " + sig);
        // overflow=K:N;K:N
        std::stringstream list(arg(args, "overflow", ""));
        std::string item;
        while (std::getline(list, item, ';'))
        {
            if (item.empty()) continue;
            auto colon = item.find(':');
            if (colon == std::string::npos)
                throw std::runtime_error("sluice_test: overflow entries are START:COUNT, not " + item);
            overflows.emplace_back(std::stoull(item.substr(0, colon)), std::stoull(item.substr(colon + 1)));
        }
        for (size_t c = 0; c < 4; c++)
        {
            freq[c] = 100e6;
            gains[c]["LNA"] = 0;
            gains[c]["VGA"] = 0;
            antenna[c] = "RX";
        }
    }

    std::string getDriverKey(void) const { return "sluice_test"; }
    std::string getHardwareKey(void) const { return "sluice_test_v1"; }

    size_t getNumChannels(const int dir) const { return dir == SOAPY_SDR_RX ? rx_channels : 1; }

    std::vector<std::string> getStreamFormats(const int, const size_t) const
    {
        return {SOAPY_SDR_CF32, SOAPY_SDR_CS16, SOAPY_SDR_CS8, SOAPY_SDR_CU8};
    }

    std::string getNativeStreamFormat(const int, const size_t, double &fullScale) const
    {
        fullScale = 32768;
        return SOAPY_SDR_CS16;
    }

    // Settings --------------------------------------------------------------------------------

    void check_channel(const int dir, const size_t ch) const
    {
        if (ch >= getNumChannels(dir))
            throw std::runtime_error("sluice_test: no channel " + std::to_string(ch));
    }

    std::vector<std::string> listAntennas(const int, const size_t) const { return {"RX", "CAL"}; }
    void setAntenna(const int dir, const size_t ch, const std::string &name)
    {
        check_channel(dir, ch);
        if (name != "RX" && name != "CAL")
            throw std::runtime_error("sluice_test: no antenna " + name + " (antennas: RX, CAL)");
        antenna[ch] = name;
    }
    std::string getAntenna(const int, const size_t ch) const { return antenna[ch % 4]; }

    bool hasDCOffsetMode(const int, const size_t) const { return true; }
    void setDCOffsetMode(const int, const size_t ch, const bool a) { dc_mode[ch % 4] = a; }
    bool getDCOffsetMode(const int, const size_t ch) const { return dc_mode[ch % 4]; }
    bool hasIQBalanceMode(const int, const size_t) const { return true; }
    void setIQBalanceMode(const int, const size_t ch, const bool a) { iq_mode[ch % 4] = a; }
    bool getIQBalanceMode(const int, const size_t ch) const { return iq_mode[ch % 4]; }

    bool hasFrequencyCorrection(const int, const size_t) const { return true; }
    void setFrequencyCorrection(const int, const size_t ch, const double v)
    {
        if (std::fabs(v) > 200)
            throw std::runtime_error("sluice_test: frequency correction " + std::to_string(v) + " ppm is outside -200 .. 200");
        ppm[ch % 4] = v;
    }
    double getFrequencyCorrection(const int, const size_t ch) const { return ppm[ch % 4]; }

    std::vector<std::string> listGains(const int, const size_t) const { return {"LNA", "VGA"}; }
    bool hasGainMode(const int, const size_t) const { return true; }
    void setGainMode(const int, const size_t ch, const bool a) { agc[ch % 4] = a; }
    bool getGainMode(const int, const size_t ch) const { return agc[ch % 4]; }
    SoapySDR::Range getGainRange(const int, const size_t, const std::string &name) const
    {
        if (name == "LNA") return SoapySDR::Range(0, 30, 1);
        if (name == "VGA") return SoapySDR::Range(0, 40, 2);
        throw std::runtime_error("sluice_test: no gain element " + name + " (elements: LNA, VGA)");
    }
    void setGain(const int dir, const size_t ch, const std::string &name, const double v)
    {
        check_channel(dir, ch);
        auto r = getGainRange(dir, ch, name);
        if (v < r.minimum() || v > r.maximum())
            throw std::runtime_error("sluice_test: gain " + name + " " + std::to_string(v) + " dB is outside " + range_text(r.minimum(), r.maximum()) + " dB");
        gains[ch][name] = v;
    }
    double getGain(const int, const size_t ch, const std::string &name) const
    {
        auto it = gains[ch % 4].find(name);
        return it == gains[ch % 4].end() ? 0 : it->second;
    }
    // The overall gain: the base class spreads it over LNA then VGA; the range is their sum.
    SoapySDR::Range getGainRange(const int, const size_t) const { return SoapySDR::Range(0, 70, 1); }
    void setGain(const int dir, const size_t ch, const double v)
    {
        if (v < 0 || v > 70)
            throw std::runtime_error("sluice_test: gain " + std::to_string(v) + " dB is outside 0 .. 70 dB");
        SoapySDR::Device::setGain(dir, ch, v);
    }

    std::vector<std::string> listFrequencies(const int, const size_t) const { return {"RF"}; }
    SoapySDR::RangeList getFrequencyRange(const int, const size_t) const { return {SoapySDR::Range(MIN_FREQ, MAX_FREQ)}; }
    SoapySDR::RangeList getFrequencyRange(const int d, const size_t c, const std::string &) const { return getFrequencyRange(d, c); }
    void setFrequency(const int dir, const size_t ch, const double f, const SoapySDR::Kwargs &)
    {
        check_channel(dir, ch);
        if (f < MIN_FREQ || f > MAX_FREQ)
            throw std::runtime_error("sluice_test: frequency " + std::to_string(f) + " Hz is outside " + range_text(MIN_FREQ, MAX_FREQ) + " Hz");
        freq[ch] = f;
    }
    void setFrequency(const int dir, const size_t ch, const std::string &, const double f, const SoapySDR::Kwargs &a)
    {
        setFrequency(dir, ch, f, a);
    }
    double getFrequency(const int, const size_t ch) const { return freq[ch % 4]; }
    double getFrequency(const int, const size_t ch, const std::string &) const { return freq[ch % 4]; }

    std::vector<double> listSampleRates(const int, const size_t) const
    {
        return {250e3, 1.024e6, 2.048e6, 2.4e6, 3.2e6};
    }
    SoapySDR::RangeList getSampleRateRange(const int, const size_t) const
    {
        return {SoapySDR::Range(225001, 300000), SoapySDR::Range(900001, 3200000)};
    }
    void setSampleRate(const int dir, const size_t, const double r)
    {
        // One clock for all channels, as most multi-channel front ends have.
        bool ok = (r >= 225001 && r <= 300000) || (r >= 900001 && r <= 3200000);
        if (!ok)
            throw std::runtime_error("sluice_test: sample rate " + std::to_string(r) + " Hz is outside 225001 .. 300000, 900001 .. 3200000 Hz");
        rate[dir == SOAPY_SDR_RX ? 0 : 1] = r;
    }
    double getSampleRate(const int dir, const size_t) const { return rate[dir == SOAPY_SDR_RX ? 0 : 1]; }

    std::vector<double> listBandwidths(const int, const size_t) const { return {200e3, 1e6, 2e6, 8e6}; }
    SoapySDR::RangeList getBandwidthRange(const int, const size_t) const { return {SoapySDR::Range(200e3, 8e6)}; }
    void setBandwidth(const int, const size_t ch, const double bw)
    {
        if (bw < 200e3 || bw > 8e6)
            throw std::runtime_error("sluice_test: bandwidth " + std::to_string(bw) + " Hz is outside 200000 .. 8000000 Hz");
        bandwidth[ch % 4] = bw;
    }
    double getBandwidth(const int, const size_t ch) const { return bandwidth[ch % 4]; }

    bool hasHardwareTime(const std::string &what) const { return what.empty(); }
    long long getHardwareTime(const std::string &) const { return sample_time(next); }
    void setHardwareTime(const long long t, const std::string &) { time0 = t - (long long)(next * 1e9 / rate[0]); }

    // Streams ---------------------------------------------------------------------------------

    SoapySDR::Stream *setupStream(const int dir, const std::string &format, const std::vector<size_t> &channels, const SoapySDR::Kwargs &)
    {
        if (format != SOAPY_SDR_CF32 && format != SOAPY_SDR_CS16 && format != SOAPY_SDR_CS8 && format != SOAPY_SDR_CU8)
            throw std::runtime_error("sluice_test: stream format " + format + " (formats: CF32, CS16, CS8, CU8)");
        if (dir == SOAPY_SDR_TX)
        {
            if (format != SOAPY_SDR_CF32 && format != SOAPY_SDR_CS16)
                throw std::runtime_error("sluice_test: TX takes CF32 or CS16, not " + format);
            auto *s = new TxStream{format};
            return reinterpret_cast<SoapySDR::Stream *>(s);
        }
        std::vector<size_t> chans = channels.empty() ? std::vector<size_t>{0} : channels;
        for (auto c : chans) check_channel(dir, c);
        auto *s = new RxStream{format, chans};
        rx = s;
        return reinterpret_cast<SoapySDR::Stream *>(s);
    }

    void closeStream(SoapySDR::Stream *stream)
    {
        if (reinterpret_cast<void *>(stream) == reinterpret_cast<void *>(rx))
        {
            delete rx;
            rx = nullptr;
        }
        else
            delete reinterpret_cast<TxStream *>(stream);
    }

    size_t getStreamMTU(SoapySDR::Stream *) const { return 4096; }

    int activateStream(SoapySDR::Stream *stream, const int, const long long, const size_t)
    {
        if (reinterpret_cast<void *>(stream) == reinterpret_cast<void *>(rx))
        {
            next = 0;
            started = std::chrono::steady_clock::now();
        }
        return 0;
    }

    int deactivateStream(SoapySDR::Stream *, const int, const long long) { return 0; }

    long long sample_time(uint64_t k) const
    {
        return time0 + (long long)std::llround((double)k * 1e9 / rate[0]);
    }

    template <typename T>
    void fill(void *buf, size_t c, uint64_t k0, size_t n, double full, double off) const
    {
        T *out = static_cast<T *>(buf);
        for (size_t i = 0; i < n; i++)
        {
            uint64_t k = k0 + i;
            if (tone_signal)
            {
                double ph = 2 * M_PI * tone * (double)k / rate[0];
                out[2 * i] = (T)(0.5 * std::cos(ph) * full + off);
                out[2 * i + 1] = (T)(0.5 * std::sin(ph) * full + off);
            }
            else
            {
                out[2 * i] = (T)k;
                out[2 * i + 1] = (T)c;
            }
        }
    }

    int readStream(SoapySDR::Stream *stream, void *const *buffs, const size_t numElems, int &flags, long long &timeNs, const long timeoutUs)
    {
        auto *s = reinterpret_cast<RxStream *>(stream);
        flags = 0;
        // An injected overflow at `next`: report it once, then skip the lost samples.
        for (auto &o : overflows)
        {
            if (o.first == next && o.second > 0)
            {
                next += o.second;
                o.second = 0;
                return SOAPY_SDR_OVERFLOW;
            }
        }
        size_t n = numElems;
        for (auto &o : overflows)
            if (o.second > 0 && o.first > next && o.first - next < n) n = o.first - next;
        if (pace)
        {
            // Samples exist once the wall clock has reached them.
            auto now = std::chrono::steady_clock::now();
            double elapsed = std::chrono::duration<double>(now - started).count();
            double have = elapsed * rate[0] - (double)next;
            if (rt_buffer > 0 && have > (double)rt_buffer)
            {
                // The FIFO overflowed while the reader was away: what it could not hold is lost,
                // and it restarts half full (resuming exactly full would overflow again at once).
                next += (uint64_t)(have - (double)rt_buffer / 2);
                return SOAPY_SDR_OVERFLOW;
            }
            // As a radio's USB or network packets do, a read returns once a packet's worth
            // (the MTU, or what was asked if less) has arrived, not sample by sample.
            size_t most = rt_buffer > 0 ? std::max<size_t>(rt_buffer / 2, 1) : n;
            double packet = (double)std::min({n, getStreamMTU(stream), most});
            if (have < packet)
            {
                double wait = (packet - have) / rate[0];
                if (wait * 1e6 > timeoutUs) {
                    std::this_thread::sleep_for(std::chrono::microseconds(timeoutUs));
                    return SOAPY_SDR_TIMEOUT;
                }
                std::this_thread::sleep_for(std::chrono::duration<double>(wait));
                have = packet;
            }
            if ((double)n > have) n = (size_t)have;
        }
        for (size_t i = 0; i < s->channels.size(); i++)
        {
            size_t c = s->channels[i];
            if (s->format == SOAPY_SDR_CF32)
            {
                float *out = static_cast<float *>(buffs[i]);
                for (size_t j = 0; j < n; j++)
                {
                    uint64_t k = next + j;
                    if (tone_signal)
                    {
                        double ph = 2 * M_PI * tone * (double)k / rate[0];
                        out[2 * j] = (float)(0.5 * std::cos(ph));
                        out[2 * j + 1] = (float)(0.5 * std::sin(ph));
                    }
                    else
                    {
                        out[2 * j] = (float)(k & 0xffffff);
                        out[2 * j + 1] = (float)c;
                    }
                }
            }
            else if (s->format == SOAPY_SDR_CS16)
                fill<int16_t>(buffs[i], c, next, n, 32767, 0);
            else if (s->format == SOAPY_SDR_CS8)
                fill<int8_t>(buffs[i], c, next, n, 127, 0);
            else
                fill<uint8_t>(buffs[i], c, next, n, 127, 127.5);
        }
        flags = SOAPY_SDR_HAS_TIME;
        timeNs = sample_time(next);
        next += n;
        return (int)n;
    }

    int writeStream(SoapySDR::Stream *stream, const void *const *buffs, const size_t numElems, int &flags, const long long timeNs, const long)
    {
        auto *s = reinterpret_cast<TxStream *>(stream);
        std::lock_guard<std::mutex> lock(status_lock);
        if (!tx_log.empty())
        {
            FILE *log = std::fopen(tx_log.c_str(), "a");
            if (log)
            {
                std::fprintf(log, "write %zu %d %lld\n", numElems, flags, (flags & SOAPY_SDR_HAS_TIME) ? timeNs : -1LL);
                std::fclose(log);
            }
            FILE *data = std::fopen((tx_log + ".cf32").c_str(), "ab");
            if (data)
            {
                std::vector<float> v(2 * numElems);
                if (s->format == SOAPY_SDR_CF32)
                    std::memcpy(v.data(), buffs[0], v.size() * sizeof(float));
                else
                    for (size_t i = 0; i < v.size(); i++) v[i] = static_cast<const int16_t *>(buffs[0])[i] / 32768.0f;
                std::fwrite(v.data(), sizeof(float), v.size(), data);
                std::fclose(data);
            }
        }
        double r = rate[1];
        if (flags & SOAPY_SDR_HAS_TIME)
        {
            if (timeNs < tx_clock)
                events.push_back({SOAPY_SDR_TIME_ERROR, timeNs});
            else if (in_burst && timeNs > tx_clock)
                events.push_back({SOAPY_SDR_UNDERFLOW, tx_clock});
            tx_clock = timeNs;
        }
        tx_clock += (long long)std::llround((double)numElems * 1e9 / r);
        in_burst = !(flags & SOAPY_SDR_END_BURST);
        status_cv.notify_all();
        flags = 0;
        return (int)numElems;
    }

    int readStreamStatus(SoapySDR::Stream *, size_t &chanMask, int &flags, long long &timeNs, const long timeoutUs)
    {
        std::unique_lock<std::mutex> lock(status_lock);
        status_cv.wait_for(lock, std::chrono::microseconds(timeoutUs), [this] { return !events.empty(); });
        if (events.empty()) return SOAPY_SDR_TIMEOUT;
        auto e = events.front();
        events.pop_front();
        chanMask = 1;
        flags = SOAPY_SDR_HAS_TIME;
        timeNs = e.second;
        return e.first;
    }

private:
    size_t rx_channels;
    long long time0;
    bool pace;
    uint64_t rt_buffer;
    bool tone_signal;
    double tone;
    std::string tx_log;
    std::vector<std::pair<uint64_t, uint64_t>> overflows;
    double freq[4];
    std::map<std::string, double> gains[4];
    std::string antenna[4];
    bool dc_mode[4] = {false, false, false, false};
    bool iq_mode[4] = {false, false, false, false};
    bool agc[4] = {false, false, false, false};
    double ppm[4] = {0, 0, 0, 0};
    double bandwidth[4] = {2e6, 2e6, 2e6, 2e6};
    double rate[2] = {1.024e6, 1.024e6};
    RxStream *rx = nullptr;
    uint64_t next = 0;
    std::chrono::steady_clock::time_point started;
    std::mutex status_lock;
    std::condition_variable status_cv;
    std::deque<std::pair<int, long long>> events;
    long long tx_clock = 0;
    bool in_burst = false;
};

SoapySDR::KwargsList find_sluice_test(const SoapySDR::Kwargs &args)
{
    auto d = args.find("driver");
    if (d != args.end() && d->second != "sluice_test") return {};
    // SoapySDR shares one device object among all makes whose enumerated arguments are
    // equal; echoing the arguments makes each distinct argument set a device of its own
    // (tests running at once add a test_id).
    SoapySDR::Kwargs found = args;
    found["driver"] = "sluice_test";
    found["label"] = "sluice test device";
    found["serial"] = "5L1CE";
    return {found};
}

SoapySDR::Device *make_sluice_test(const SoapySDR::Kwargs &args) { return new SluiceTest(args); }

SoapySDR::Registry register_sluice_test("sluice_test", &find_sluice_test, &make_sluice_test, SOAPY_SDR_ABI_VERSION);

} // namespace
