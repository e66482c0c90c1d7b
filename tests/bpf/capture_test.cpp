// Capture in the data plane (bpf/capture.h): nothing is copied or counted
// while no capture runs; a running capture copies the frames of the outcomes
// asked for with their outcome, length and bytes, 1 in sample_every per CPU,
// never more than the reader's buffer holds (the rest counted lost), and
// turns itself off past its lease. The verdicts never change.
#include "fixture.h"
#include "require.h"

#include <bpf/libbpf.h>

#include <cstring>
#include <vector>

using namespace sluice::test;
using namespace sluice::frames;

namespace {

struct Copied {
	sluice_capture_record rec;
	Bytes bytes;
};

// The perf buffer sluiced would open, on the test's program.
class Reader {
public:
	Reader(const Sluice &s, size_t pages)
	{
		pb_ = perf_buffer__new(s.map_fd(s.skel()->maps.capture_events), pages, &Reader::sample, nullptr, this,
				       nullptr);
	}
	~Reader()
	{
		if (pb_)
			perf_buffer__free(pb_);
	}
	bool ok() const { return pb_ != nullptr; }
	std::vector<Copied> drain()
	{
		got_.clear();
		perf_buffer__consume(pb_);
		return std::move(got_);
	}

private:
	static void sample(void *ctx, int, void *data, uint32_t size)
	{
		auto *r = static_cast<Reader *>(ctx);
		Copied c{};
		if (size < sizeof(c.rec))
			return;
		std::memcpy(&c.rec, data, sizeof(c.rec));
		const auto *b = static_cast<const std::uint8_t *>(data) + sizeof(c.rec);
		c.bytes.assign(b, b + std::min<size_t>(c.rec.cap_len, size - sizeof(c.rec)));
		r->got_.push_back(std::move(c));
	}
	perf_buffer *pb_ = nullptr;
	std::vector<Copied> got_;
};

int set_capture(const Sluice &s, const sluice_capture &c)
{
	std::uint32_t zero = 0;
	return bpf_map_update_elem(s.map_fd(s.skel()->maps.data_capture), &zero, &c, BPF_ANY) ? -errno : 0;
}

sluice_capture read_capture(const Sluice &s)
{
	std::uint32_t zero = 0;
	sluice_capture c{};
	bpf_map_lookup_elem(s.map_fd(s.skel()->maps.data_capture), &zero, &c);
	return c;
}

sluice_capture_stats stats(const Sluice &s, std::uint64_t generation)
{
	int cpus = libbpf_num_possible_cpus();
	std::vector<sluice_capture_stats> per(static_cast<size_t>(cpus));
	std::uint32_t zero = 0;
	bpf_map_lookup_elem(s.map_fd(s.skel()->maps.capture_stats), &zero, per.data());
	sluice_capture_stats t{};
	for (const auto &p : per)
		if (p.generation == generation) {
			t.matched += p.matched;
			t.copied += p.copied;
			t.lost += p.lost;
		}
	return t;
}

sluice_capture running(std::uint32_t mask, std::uint32_t snaplen = 128, std::uint32_t every = 1,
		       std::uint64_t generation = 1)
{
	sluice_capture c{};
	c.outcome_mask = mask;
	c.sample_every = every;
	c.snaplen = snaplen;
	c.lease_ns = mono_ns() + 60'000'000'000ull;
	c.generation = generation;
	return c;
}

Options limits(std::uint64_t rate, std::uint64_t burst)
{
	Options o;
	o.config = make_config(rate, burst);
	return o;
}

constexpr std::uint32_t bit(std::uint32_t o)
{
	return 1u << o;
}

} // namespace

TEST(Capture, NoCaptureRunningCopiesAndCountsNothing)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, limits(1, 10));
	Reader reader(s, 8);
	ASSERT_TRUE(reader.ok());
	EXPECT_EQ(read_capture(s).outcome_mask, 0u); // loaded off
	Bytes v4 = udp4({}, {.src = ip4("10.40.0.1")});
	RunResult r = s.run(v4, 10); // passes
	ASSERT_EQ(r.err, 0);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_PASS));
	r = s.run(v4, 1000); // drops
	EXPECT_EQ(r.retval, std::uint32_t(XDP_DROP));
	EXPECT_TRUE(reader.drain().empty());
	auto st = stats(s, 0);
	EXPECT_EQ(st.matched, 0u);
	EXPECT_EQ(st.copied, 0u);
	EXPECT_EQ(s.counters().packets(SLUICE_DROP_RATE), 1000u);
}

TEST(Capture, RunningCopiesTheOutcomeLengthAndBytesOfTheFramesAsked)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, limits(1, 5));
	Reader reader(s, 64);
	ASSERT_TRUE(reader.ok());
	ASSERT_EQ(set_capture(s, running(bit(SLUICE_DROP_RATE), 64)), 0);
	Bytes frame = udp4_sized(200, {}, {.src = ip4("10.40.0.2")});
	RunResult r = s.run(frame, 5); // the burst passes: not asked for
	EXPECT_EQ(r.retval, std::uint32_t(XDP_PASS));
	EXPECT_TRUE(reader.drain().empty());
	r = s.run(frame, 20);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_DROP)); // the verdict is the capture's business not
	auto got = reader.drain();
	ASSERT_EQ(got.size(), 20u);
	for (const auto &c : got) {
		EXPECT_EQ(c.rec.outcome, SLUICE_DROP_RATE);
		EXPECT_EQ(c.rec.wire_len, 200u);
		EXPECT_EQ(c.rec.cap_len, 64u);
		ASSERT_EQ(c.bytes.size(), 64u);
		EXPECT_TRUE(std::equal(c.bytes.begin(), c.bytes.end(), frame.begin()));
		EXPECT_GT(c.rec.time_ns, 0u);
	}
	auto st = stats(s, 1);
	EXPECT_EQ(st.matched, 20u);
	EXPECT_EQ(st.copied, 20u);
	EXPECT_EQ(st.lost, 0u);

	// Passed frames too, shorter than the snaplen: copied whole.
	ASSERT_EQ(set_capture(s, running(bit(SLUICE_PASSED), 128, 1, 2)), 0);
	Bytes other = udp4({}, {.src = ip4("10.40.0.3")});
	r = s.run(other, 3);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_PASS));
	got = reader.drain();
	ASSERT_EQ(got.size(), 3u);
	for (const auto &c : got) {
		EXPECT_EQ(c.rec.outcome, SLUICE_PASSED);
		EXPECT_EQ(c.rec.wire_len, other.size());
		EXPECT_EQ(c.rec.cap_len, other.size());
		EXPECT_EQ(c.bytes, other);
	}
	EXPECT_EQ(stats(s, 2).matched, 3u); // a new generation counts from 0
}

TEST(Capture, SampleEveryTakesOneInNPerCpu)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, limits(1, 1));
	Reader reader(s, 64);
	ASSERT_TRUE(reader.ok());
	ASSERT_EQ(set_capture(s, running(bit(SLUICE_DROP_RATE), 64, 10)), 0);
	Bytes frame = udp4({}, {.src = ip4("10.40.0.4")});
	(void)s.run(frame, 1);
	RunResult r = s.run(frame, 1000);
	ASSERT_EQ(r.err, 0);
	auto got = reader.drain();
	auto st = stats(s, 1);
	EXPECT_EQ(st.matched, 1000u);
	// One CPU: exactly 100; the run may move between CPUs between its
	// repetitions, each CPU then takes its own first frame.
	EXPECT_GE(got.size(), 100u);
	EXPECT_LE(got.size(), 100u + unsigned(libbpf_num_possible_cpus()));
	EXPECT_EQ(st.copied, got.size());
}

TEST(Capture, TheReadersBufferBoundsWhatIsCopiedTheRestIsCountedLost)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, limits(1, 1));
	Reader reader(s, 1); // one page per CPU
	ASSERT_TRUE(reader.ok());
	ASSERT_EQ(set_capture(s, running(bit(SLUICE_DROP_RATE), SLUICE_CAPTURE_SNAPLEN_MAX)), 0);
	Bytes frame = udp4_sized(1500, {}, {.src = ip4("10.40.0.5")});
	(void)s.run(frame, 1);
	RunResult r = s.run(frame, 5000);
	ASSERT_EQ(r.err, 0);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_DROP));
	auto st = stats(s, 1);
	auto got = reader.drain();
	EXPECT_EQ(st.matched, 5000u);
	EXPECT_EQ(st.copied + st.lost, 5000u);
	EXPECT_GT(st.lost, 0u);
	EXPECT_EQ(got.size(), st.copied);
	// A page holds two 1500-byte frames with their headers, at most.
	EXPECT_LE(got.size(), 2u * unsigned(libbpf_num_possible_cpus()));
	for (const auto &c : got)
		EXPECT_EQ(c.rec.cap_len, 1500u);
}

TEST(Capture, PastItsLeaseTheCaptureTurnsItselfOff)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, limits(1, 1));
	Reader reader(s, 8);
	ASSERT_TRUE(reader.ok());
	sluice_capture c = running(bit(SLUICE_DROP_RATE));
	c.lease_ns = mono_ns() - 1; // the daemon stopped renewing it
	ASSERT_EQ(set_capture(s, c), 0);
	Bytes frame = udp4({}, {.src = ip4("10.40.0.6")});
	RunResult r = s.run(frame, 50);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_DROP));
	EXPECT_TRUE(reader.drain().empty());
	EXPECT_EQ(read_capture(s).outcome_mask, 0u);
}

TEST(Capture, WithoutAReaderNothingIsCopiedAndTheVerdictStands)
{
	SLUICE_REQUIRE_ROOT();
	SLUICE_LOAD_OR_FAIL(s, limits(1, 1));
	{
		Reader gone(s, 8); // opened and closed: the array's entries go with it
		ASSERT_TRUE(gone.ok());
	}
	ASSERT_EQ(set_capture(s, running(bit(SLUICE_DROP_RATE))), 0);
	Bytes frame = udp4({}, {.src = ip4("10.40.0.7")});
	(void)s.run(frame, 1);
	RunResult r = s.run(frame, 100);
	EXPECT_EQ(r.retval, std::uint32_t(XDP_DROP));
	auto st = stats(s, 1);
	EXPECT_EQ(st.matched, 100u);
	EXPECT_EQ(st.copied, 0u);
	EXPECT_EQ(st.lost, 100u);
	EXPECT_EQ(s.counters().packets(SLUICE_DROP_RATE), 100u); // the first frame had the burst
}
