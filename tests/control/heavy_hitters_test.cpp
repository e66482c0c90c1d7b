// SpaceSaving (ctl/lib/logic/heavy_hitters.h): bounded memory, exact below capacity,
// and the classic guarantees on a synthetic Zipf stream checked against exact
// counts: count - error <= f <= count, error <= N/m, every key with f > N/m
// monitored, counts summing to N.
#include "logic/heavy_hitters.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <unordered_map>

using namespace sluice;

namespace {

HitterKey k(uint64_t v)
{
	return HitterKey{v * 0x9e3779b97f4a7c15ull, v, 7};
}

// n keys 0..n-1 with P(i) proportional to 1 / (i + 1)^s.
class Zipf {
public:
	Zipf(size_t n, double s)
	{
		cdf_.resize(n);
		double sum = 0;
		for (size_t i = 0; i < n; i++)
			cdf_[i] = (sum += 1.0 / std::pow(double(i + 1), s));
		for (auto &c : cdf_)
			c /= sum;
	}
	uint64_t operator()(std::mt19937_64 &rng)
	{
		double u = std::uniform_real_distribution<double>(0, 1)(rng);
		return static_cast<uint64_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
	}

private:
	std::vector<double> cdf_;
};

// Every guarantee of the summary against the exact counts of the stream.
void check_guarantees(const SpaceSaving &ss, const std::unordered_map<uint64_t, uint64_t> &exact, uint64_t n)
{
	const size_t m = ss.capacity();
	ASSERT_EQ(ss.total(), n);
	uint64_t sum = 0;
	std::map<std::pair<uint64_t, uint64_t>, bool> monitored;
	for (const auto &it : ss.top(m)) {
		sum += it.count;
		uint64_t f = exact.count(it.key.lo) ? exact.at(it.key.lo) : 0;
		EXPECT_LE(it.count - it.error, f) << "key " << it.key.lo;
		EXPECT_GE(it.count, f) << "key " << it.key.lo;
		EXPECT_LE(it.error * m, n) << "error above N/m for key " << it.key.lo;
		EXPECT_GE(it.count, it.error);
		monitored[{it.key.hi, it.key.lo}] = true;
	}
	EXPECT_EQ(sum, n) << "counts must sum to the stream's weight";
	EXPECT_LE(ss.min_count() * m, n);
	for (const auto &[key, f] : exact)
		if (f * m > n) {
			EXPECT_TRUE(monitored.count({k(key).hi, k(key).lo})) << "key " << key << " with f=" << f << " > N/m";
			ASSERT_NE(ss.find(k(key)), nullptr);
		}
}

} // namespace

TEST(SpaceSaving, ExactWhileUnderCapacity)
{
	SpaceSaving ss(64, 1);
	for (uint64_t i = 0; i < 40; i++)
		for (uint64_t r = 0; r <= i; r++)
			ss.add(k(i));
	EXPECT_EQ(ss.size(), 40u);
	EXPECT_EQ(ss.min_count(), 0u); // not full
	auto top = ss.top(5);
	ASSERT_EQ(top.size(), 5u);
	for (size_t j = 0; j < 5; j++) {
		EXPECT_EQ(top[j].key, k(39 - j));
		EXPECT_EQ(top[j].count, 40 - j);
		EXPECT_EQ(top[j].error, 0u);
	}
	ASSERT_NE(ss.find(k(3)), nullptr);
	EXPECT_EQ(ss.find(k(3))->count, 4u);
	EXPECT_EQ(ss.find(k(1000)), nullptr);
}

TEST(SpaceSaving, SizeNeverExceedsCapacityUnderAMillionDistinctKeys)
{
	SpaceSaving ss(1024, 42);
	for (uint64_t i = 0; i < 1'000'000; i++)
		ss.add(k(i));
	EXPECT_EQ(ss.size(), 1024u);
	EXPECT_EQ(ss.capacity(), 1024u);
	EXPECT_EQ(ss.total(), 1'000'000u);
	uint64_t sum = 0;
	for (const auto &it : ss.top(ss.capacity())) {
		sum += it.count;
		// every monitored key is found again through the table
		const auto *found = ss.find(it.key);
		ASSERT_NE(found, nullptr);
		EXPECT_EQ(found->count, it.count);
	}
	EXPECT_EQ(sum, 1'000'000u);
	EXPECT_LE(ss.min_count() * 1024, 1'000'000u);
}

TEST(SpaceSaving, ZipfStreamKeepsTheClassicGuarantees)
{
	for (auto [m, s] : {std::pair<size_t, double>{100, 1.1}, {1000, 1.1}, {200, 0.8}, {50, 1.5}}) {
		SCOPED_TRACE("capacity " + std::to_string(m) + " zipf s=" + std::to_string(s));
		std::mt19937_64 rng(m * 1000 + static_cast<uint64_t>(s * 10));
		Zipf zipf(100'000, s);
		SpaceSaving ss(m, rng());
		std::unordered_map<uint64_t, uint64_t> exact;
		const uint64_t n = 500'000;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t key = zipf(rng);
			exact[key]++;
			ss.add(k(key));
		}
		EXPECT_EQ(ss.size(), m);
		check_guarantees(ss, exact, n);
		// On a skewed stream the heaviest keys come out in order: the true
		// top 10 are the summary's top 10 whenever their counts are apart by
		// more than the largest error among them.
		if (s >= 1.0 && m >= 100) {
			std::vector<std::pair<uint64_t, uint64_t>> truth(exact.begin(), exact.end());
			std::sort(truth.begin(), truth.end(), [](auto a, auto b) { return a.second > b.second; });
			auto top = ss.top(10);
			for (size_t j = 0; j < 10; j++)
				EXPECT_EQ(top[j].key.lo, truth[j].first) << "rank " << j;
		}
	}
}

TEST(SpaceSaving, WeightsAndChurnAroundAHeavyKey)
{
	// A heavy key among a churn of one-off keys (a spoofed flood around one
	// real flooder): it stays monitored with its weight, within the error bound.
	SpaceSaving ss(16, 3);
	std::unordered_map<uint64_t, uint64_t> exact;
	uint64_t n = 0;
	for (uint64_t i = 1; i <= 200'000; i++) {
		uint64_t key = (i % 4 == 0) ? 0 : i;
		uint64_t w = (i % 7) + 1;
		ss.add(k(key), w);
		exact[key] += w;
		n += w;
	}
	check_guarantees(ss, exact, n);
	auto top = ss.top(1);
	ASSERT_EQ(top.size(), 1u);
	EXPECT_EQ(top[0].key, k(0));
	ss.add(k(5), 0); // zero weight: nothing
	EXPECT_EQ(ss.total(), n);
}

TEST(SpaceSaving, ClearKeepsCapacity)
{
	SpaceSaving ss(8);
	for (uint64_t i = 0; i < 100; i++)
		ss.add(k(i % 20));
	ss.clear();
	EXPECT_EQ(ss.size(), 0u);
	EXPECT_EQ(ss.total(), 0u);
	EXPECT_EQ(ss.capacity(), 8u);
	EXPECT_TRUE(ss.top(8).empty());
	EXPECT_EQ(ss.find(k(1)), nullptr);
	ss.add(k(1), 3);
	EXPECT_EQ(ss.top(1)[0].count, 3u);
	EXPECT_THROW(SpaceSaving(0), std::invalid_argument);
}

TEST(SpaceSaving, CidrKeysRoundTrip)
{
	for (const char *text : {"198.18.0.7/32", "10.0.0.0/8", "2001:2:0:3::/64", "2001:2::1/128", "0.0.0.0/0"}) {
		auto c = parse_cidr(text);
		ASSERT_TRUE(c) << text;
		EXPECT_EQ(key_cidr(cidr_key(*c)), *c) << text;
		EXPECT_EQ(key_cidr(cidr_key(*c)).str(), text);
	}
	// the same bits as v4 and as v6 are different keys
	auto a = parse_cidr("1.2.3.4/32"), b = parse_cidr("102:304::/32");
	EXPECT_FALSE(cidr_key(*a) == cidr_key(*b));
}
