// What sluicectl reads from the pins (sluicectl/pins.h): class list's view of
// the policy set in force and stats' per-class counters, against a real
// loaded program's maps (records written as bpf/policy_tables writes them).
#include "require.h"

#include "bpf/dataplane.h"
#include "ipc/encode.h"
#include "sluicectl/pins.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cstring>
#include <vector>

namespace {

using namespace sluice;

sluice_config base_config()
{
	sluice_config cfg{};
	cfg.cost_ns = *cost_for_rate(10000);
	cfg.rate_pps = 10000;
	cfg.burst = 20000;
	cfg.standing_cost_ns = *cost_for_rate(1000000);
	cfg.standing_rate_pps = 1000000;
	cfg.standing_burst = 100000;
	cfg.breaker_state = SLUICE_SERVING;
	cfg.admission_ppm = SLUICE_PPM_FULL;
	return cfg;
}

Dataplane load()
{
	LoadOptions lo;
	lo.slots = 1024;
	lo.v4_prefix = 24;
	lo.v6_prefix = 56;
	lo.hash_key = std::array<uint64_t, 2>{1, 2};
	auto dp = Dataplane::load(lo, base_config());
	EXPECT_TRUE(dp) << dp.error().describe();
	return std::move(*dp);
}

void put(const Dataplane &dp, uint32_t set, uint32_t id, sluice_class c, const char *name)
{
	std::strncpy(c.name, name, sizeof(c.name));
	uint32_t index = set * SLUICE_CLASSES_MAX + id;
	ASSERT_EQ(bpf_map_update_elem(dp.policy_maps().classes, &index, &c, BPF_ANY), 0) << std::strerror(errno);
}

sluice_class limit_class(uint64_t rate, uint64_t burst)
{
	sluice_class c{};
	c.action = SLUICE_CLASS_LIMIT;
	c.rate_pps = rate;
	c.cost_ns = *cost_for_rate(rate);
	c.burst = burst;
	c.v4_prefix = 32;
	c.v6_prefix = 64;
	return c;
}

void use_set(const Dataplane &dp, uint32_t flags)
{
	auto cfg = dp.config().read();
	ASSERT_TRUE(cfg);
	cfg->policy_flags = flags;
	auto ok = dp.config().write(*cfg);
	ASSERT_TRUE(ok) << ok.error().describe();
}

TEST(SluicectlPins, ClassListShowsTheSetInForceAndTheDefaultClassAsTheProgramReadsIt)
{
	SLUICE_REQUIRE_ROOT();
	Dataplane dp = load();
	// Set 0 holds an old policy; set 1, the one in force, the new one.
	put(dp, 0, 0, limit_class(1, 1), "default");
	put(dp, 0, 9, limit_class(7, 7), "old");
	sluice_class def = limit_class(50000, 60000); // the file's default: config is what is in force
	def.byte_rate = 125000000;
	def.byte_burst = 12500000;
	def.byte_cost_fp = 1;
	put(dp, 1, 0, def, "default");
	sluice_class dns = limit_class(200, 400);
	dns.v4_prefix = 24;
	dns.v6_prefix = 48;
	dns.standing_rate_pps = 2000;
	dns.standing_burst = 4000;
	dns.standing_cost_ns = *cost_for_rate(2000);
	put(dp, 1, 3, dns, "dns");
	sluice_class health{};
	health.action = SLUICE_CLASS_EXEMPT;
	put(dp, 1, 5, health, "health");
	use_set(dp, SLUICE_POLICY_SET | SLUICE_CLASS_PORTS | SLUICE_CLASS_DEFAULT_BYTES);

	auto list = sluicectl::read_class_list(dp, "eth0");
	ASSERT_TRUE(list) << list.error().describe();
	EXPECT_EQ(list->set, 1u);
	ASSERT_EQ(list->classes.size(), 3u);
	const ClassView &d = list->classes[0];
	EXPECT_EQ(d.id, 0u);
	EXPECT_EQ(d.name, "default");
	EXPECT_EQ(d.rate_pps, 10000u); // config's, not the record's
	EXPECT_EQ(d.burst, 20000u);
	EXPECT_EQ(d.v4_prefix, 24u); // settings'
	EXPECT_EQ(d.v6_prefix, 56u);
	EXPECT_EQ(d.byte_rate, 125000000u); // the record's, with SLUICE_CLASS_DEFAULT_BYTES
	EXPECT_FALSE(d.standing_own);
	EXPECT_EQ(d.standing_rate_pps, 1000000u);
	const ClassView &n = list->classes[1];
	EXPECT_EQ(n.id, 3u);
	EXPECT_EQ(n.name, "dns");
	EXPECT_EQ(n.rate_pps, 200u);
	EXPECT_EQ(n.burst, 400u);
	EXPECT_EQ(n.v4_prefix, 24u);
	EXPECT_EQ(n.v6_prefix, 48u);
	EXPECT_EQ(n.byte_rate, 0u);
	EXPECT_TRUE(n.standing_own);
	EXPECT_EQ(n.standing_rate_pps, 2000u);
	EXPECT_EQ(n.standing_burst, 4000u);
	EXPECT_EQ(list->classes[2].action, ClassAction::exempt);

	json j = encode(*list);
	EXPECT_EQ(j["set"], 1);
	EXPECT_EQ(j["classes"][0]["byte_rate"], 125000000);
	EXPECT_EQ(j["classes"][1]["standing"]["from"], "class");
	EXPECT_EQ(j["classes"][0]["standing"]["from"], "config");
	EXPECT_EQ(j["classes"][2]["action"], "exempt");
	EXPECT_TRUE(j["classes"][2]["rate_pps"].is_null()); // no budget, not a budget of 0
	EXPECT_TRUE(j["classes"][2]["standing"].is_null());

	// Without SLUICE_CLASS_DEFAULT_BYTES the program reads no byte budget for class 0.
	use_set(dp, SLUICE_POLICY_SET | SLUICE_CLASS_PORTS);
	list = sluicectl::read_class_list(dp, "eth0");
	ASSERT_TRUE(list);
	EXPECT_EQ(list->classes[0].byte_rate, 0u);
}

TEST(SluicectlPins, WithoutAPolicyTheDefaultClassAlone)
{
	SLUICE_REQUIRE_ROOT();
	Dataplane dp = load();
	auto list = sluicectl::read_class_list(dp, "eth0");
	ASSERT_TRUE(list) << list.error().describe();
	EXPECT_EQ(list->set, 0u);
	ASSERT_EQ(list->classes.size(), 1u);
	EXPECT_EQ(list->classes[0].name, "default");
	EXPECT_EQ(list->classes[0].rate_pps, 10000u);
	auto counters = sluicectl::read_named_class_counters(dp);
	ASSERT_TRUE(counters) << counters.error().describe();
	EXPECT_TRUE(counters->empty()); // no class names: no class rows
}

TEST(SluicectlPins, ClassCountersOfTheNamedClassesOfTheSetInForce)
{
	SLUICE_REQUIRE_ROOT();
	Dataplane dp = load();
	put(dp, 1, 0, limit_class(1, 1), "default");
	put(dp, 1, 4, limit_class(100, 200), "syn");
	put(dp, 0, 6, limit_class(100, 200), "elsewhere"); // the other set: not shown
	use_set(dp, SLUICE_POLICY_SET | SLUICE_CLASS_PORTS);
	int ncpu = libbpf_num_possible_cpus();
	ASSERT_GT(ncpu, 0);
	std::vector<sluice_counter> per_cpu(static_cast<size_t>(ncpu), sluice_counter{2, 120});
	uint32_t key = 4 * SLUICE_OUTCOMES + SLUICE_DROP_RATE;
	ASSERT_EQ(bpf_map_update_elem(dp.policy_maps().class_counters, &key, per_cpu.data(), BPF_ANY), 0);

	auto rows = sluicectl::read_named_class_counters(dp);
	ASSERT_TRUE(rows) << rows.error().describe();
	ASSERT_EQ(rows->size(), 2u);
	EXPECT_EQ((*rows)[0].name, "default");
	EXPECT_EQ((*rows)[1].id, 4u);
	EXPECT_EQ((*rows)[1].name, "syn");
	EXPECT_EQ((*rows)[1].counters[SLUICE_DROP_RATE].packets, uint64_t(2 * ncpu));
	EXPECT_EQ((*rows)[1].counters[SLUICE_DROP_RATE].bytes, uint64_t(120 * ncpu));
	EXPECT_EQ((*rows)[1].counters[SLUICE_PASSED].packets, 0u);
	json j = encode((*rows)[1]);
	EXPECT_EQ(j["counters"]["drop_rate"]["packets"], 2 * ncpu);

	// A set without class flags (a policy of lists alone): the program does
	// not count per class, so there are no rows, names or not.
	use_set(dp, SLUICE_POLICY_SET | SLUICE_LIST_DENY_V4);
	rows = sluicectl::read_named_class_counters(dp);
	ASSERT_TRUE(rows) << rows.error().describe();
	EXPECT_TRUE(rows->empty());
}

} // namespace
