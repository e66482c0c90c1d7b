// bpf/policy_tables: a compiled policy written into the policy set not in
// force, flipped in one config write, the old set cleared; all or nothing
// before the flip. Against real kernel maps of the program's types, made here
// with bpf_map_create, so the test does not depend on a loaded program.
#include "require.h"

#include "bpf/class_match.h"
#include "bpf/policy_tables.h"
#include "logic/budgets.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using namespace sluice;

Cidr cidr(const char *text)
{
	auto c = parse_cidr(text);
	EXPECT_TRUE(c) << text;
	return c ? *c : Cidr{};
}

sluice_class record(const char *name, uint64_t rate, uint64_t burst)
{
	sluice_class c{};
	c.rate_pps = rate;
	c.cost_ns = SLUICE_NSEC_PER_SEC / rate;
	c.burst = burst;
	c.v4_prefix = 32;
	c.v6_prefix = 64;
	std::strncpy(c.name, name, sizeof(c.name) - 1);
	return c;
}

// A policy of two classes: udp/53 -> dns (the port table), 198.51.100.0/24
// -> nat (a prefix entry).
CompiledPolicy two_classes(uint64_t dns_rate = 200)
{
	CompiledPolicy c;
	c.ids.names[0] = "default";
	c.ids.names[1] = "dns";
	c.ids.names[2] = "nat";
	c.classes[0] = record("default", 10000, 20000);
	c.classes[1] = record("dns", dns_rate, 400);
	c.classes[2] = record("nat", 50000, 100000);
	c.ports.resize(SLUICE_L4_KINDS * SLUICE_PORT_BLOCKS);
	c.ports[SLUICE_L4_UDP * SLUICE_PORT_BLOCKS + 53 / SLUICE_PORTS_PER_BLOCK].class_of[53 % SLUICE_PORTS_PER_BLOCK] = 1;
	sluice_class_matches m{};
	m.count = 1;
	m.m[0] = {0, 65535, 0xf, 2, {}};
	c.prefixes_v4.push_back({cidr("198.51.100.0/24"), m});
	c.class_flags = SLUICE_CLASS_PORTS | SLUICE_CLASS_PREFIX_V4;
	return c;
}

class PolicyTablesTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		SLUICE_REQUIRE_ROOT();
		config_fd = make(BPF_MAP_TYPE_ARRAY, SLUICE_PIN_CONFIG, sizeof(uint32_t), sizeof(sluice_config), 1);
		make(BPF_MAP_TYPE_ARRAY, SLUICE_PIN_CLASSES, sizeof(uint32_t), sizeof(sluice_class),
		     SLUICE_POLICY_SETS * SLUICE_CLASSES_MAX);
		make(BPF_MAP_TYPE_ARRAY, SLUICE_PIN_PORT_CLASSES, sizeof(uint32_t), sizeof(sluice_port_block),
		     SLUICE_POLICY_SETS * SLUICE_L4_KINDS * SLUICE_PORT_BLOCKS);
		make_lpm(SLUICE_PIN_CLASS_V4, sizeof(sluice_lpm_v4), sizeof(sluice_class_matches), 2 * SLUICE_LIST_MAX_ENTRIES);
		make_lpm(SLUICE_PIN_CLASS_V6, sizeof(sluice_lpm_v6), sizeof(sluice_class_matches), 2 * SLUICE_LIST_MAX_ENTRIES);
		for (const char *pin : {SLUICE_PIN_ALLOW_V4, SLUICE_PIN_DENY_V4})
			make_lpm(pin, sizeof(sluice_lpm_v4), 1, 2 * SLUICE_LIST_MAX_ENTRIES);
		for (const char *pin : {SLUICE_PIN_ALLOW_V6, SLUICE_PIN_DENY_V6})
			make_lpm(pin, sizeof(sluice_lpm_v6), 1, 2 * SLUICE_LIST_MAX_ENTRIES);
		make_exact(SLUICE_PIN_DENY_EXACT_V4, sizeof(sluice_exact_v4));
		make_exact(SLUICE_PIN_DENY_EXACT_V6, sizeof(sluice_exact_v6));
		make_exact(SLUICE_PIN_ALLOW_EXACT_V4, sizeof(sluice_exact_v4));
		make_exact(SLUICE_PIN_ALLOW_EXACT_V6, sizeof(sluice_exact_v6));
		sluice_config initial{};
		initial.breaker_state = SLUICE_SERVING;
		initial.admission_ppm = SLUICE_PPM_FULL;
		auto cfg = config_with_budgets(initial, BudgetAsk{}, 1);
		ASSERT_TRUE(cfg) << cfg.error().describe();
		ASSERT_TRUE(ConfigMap(config_fd).write(*cfg));
		PrefixLists lists({fd_of(SLUICE_PIN_ALLOW_V4), fd_of(SLUICE_PIN_ALLOW_V6), fd_of(SLUICE_PIN_DENY_V4),
				   fd_of(SLUICE_PIN_DENY_V6), fd_of(SLUICE_PIN_DENY_EXACT_V4), fd_of(SLUICE_PIN_DENY_EXACT_V6),
				   fd_of(SLUICE_PIN_ALLOW_EXACT_V4), fd_of(SLUICE_PIN_ALLOW_EXACT_V6)},
				  ConfigMap(config_fd));
		tables.emplace(PolicyTables::Fds{fd_of(SLUICE_PIN_CLASSES), fd_of(SLUICE_PIN_PORT_CLASSES),
						 fd_of(SLUICE_PIN_CLASS_V4), fd_of(SLUICE_PIN_CLASS_V6)},
			       lists, ConfigMap(config_fd));
	}
	void TearDown() override
	{
		for (const auto &[_, fd] : fds)
			::close(fd);
	}
	int make(bpf_map_type type, const char *name, uint32_t key, uint32_t value, uint32_t entries,
		 const bpf_map_create_opts *opts = nullptr)
	{
		int fd = bpf_map_create(type, name, key, value, entries, opts);
		EXPECT_GE(fd, 0) << name << ": " << std::strerror(errno);
		fds[name] = fd;
		return fd;
	}
	void make_lpm(const char *name, uint32_t key, uint32_t value, uint32_t entries)
	{
		LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);
		make(BPF_MAP_TYPE_LPM_TRIE, name, key, value, entries, &opts);
	}
	void make_exact(const char *name, uint32_t key)
	{
		LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);
		make(BPF_MAP_TYPE_HASH, name, key, 1, 2 * SLUICE_LIST_MAX_ENTRIES, &opts);
	}
	int fd_of(const char *name) { return fds.at(name); }
	sluice_config config() { return *ConfigMap(config_fd).read(); }

	// Every (set, prefix) of an LPM trie with keys of type Key.
	template <class Key>
	std::set<std::pair<int, std::string>> trie(const char *pin)
	{
		std::set<std::pair<int, std::string>> out;
		int fd = fd_of(pin);
		Key cur{}, next{};
		void *prev = nullptr;
		while (bpf_map_get_next_key(fd, prev, &next) == 0) {
			Cidr c;
			c.addr.family = sizeof(next.addr) == 4 ? Family::v4 : Family::v6;
			c.prefix = next.prefixlen - SLUICE_LPM_SET_BITS;
			std::memcpy(c.addr.bytes.data(), next.addr, sizeof(next.addr));
			out.insert({next.set, c.str()});
			cur = next;
			prev = &cur;
		}
		return out;
	}
	std::string class_name(uint32_t set, uint32_t id)
	{
		int fd = fd_of(SLUICE_PIN_CLASSES);
		uint32_t k = sluice_class_index(set, id);
		sluice_class c{};
		bpf_map_lookup_elem(fd, &k, &c);
		return std::string(c.name, strnlen(c.name, sizeof(c.name)));
	}
	uint32_t port_class(uint32_t set, uint32_t kind, uint32_t port)
	{
		int fd = fd_of(SLUICE_PIN_PORT_CLASSES);
		uint32_t k = sluice_port_block_index(set, kind, port);
		sluice_port_block b{};
		bpf_map_lookup_elem(fd, &k, &b);
		return sluice_port_block_class(&b, port);
	}

	std::map<std::string, int> fds;
	int config_fd = -1;
	std::optional<PolicyTables> tables;
};

using Trie4 = std::set<std::pair<int, std::string>>;

TEST_F(PolicyTablesTest, WritesTheSetNotInForceThenFlipsAndClearsTheOld)
{
	ASSERT_EQ(*tables->set_in_force(), 0u);
	uint64_t gen = config().generation;
	PolicyLists lists{{cidr("203.0.113.0/24")}, {cidr("192.0.2.0/24"), cidr("2001:db8::/32")}};
	auto a = tables->apply(two_classes(), lists);
	ASSERT_TRUE(a) << a.error().describe();
	EXPECT_EQ(a->set, 1u);
	EXPECT_EQ(a->classes, 3u);
	EXPECT_EQ(a->prefixes, 1u);
	EXPECT_EQ(a->list_entries, 3u);
	sluice_config cfg = config();
	EXPECT_EQ(cfg.policy_flags, SLUICE_POLICY_SET | SLUICE_CLASS_PORTS | SLUICE_CLASS_PREFIX_V4 | SLUICE_LIST_ALLOW_V4 |
					    SLUICE_LIST_DENY_V4 | SLUICE_LIST_DENY_V6);
	EXPECT_EQ(cfg.generation, gen + 1) << "one config write";
	EXPECT_EQ(trie<sluice_lpm_v4>(SLUICE_PIN_CLASS_V4), (Trie4{{1, "198.51.100.0/24"}}));
	EXPECT_EQ(trie<sluice_lpm_v4>(SLUICE_PIN_ALLOW_V4), (Trie4{{1, "203.0.113.0/24"}}));
	EXPECT_EQ(trie<sluice_lpm_v4>(SLUICE_PIN_DENY_V4), (Trie4{{1, "192.0.2.0/24"}}));
	EXPECT_EQ(trie<sluice_lpm_v6>(SLUICE_PIN_DENY_V6), (Trie4{{1, "2001:db8::/32"}}));
	EXPECT_EQ(class_name(1, 1), "dns");
	EXPECT_EQ(class_name(1, 2), "nat");
	EXPECT_EQ(port_class(1, SLUICE_L4_UDP, 53), 1u);
	EXPECT_EQ(port_class(1, SLUICE_L4_TCP, 53), 0u);
	auto ids = tables->ids_in_force();
	ASSERT_TRUE(ids);
	EXPECT_EQ(*ids, two_classes().ids);
	auto deny = tables->list_in_force(ListKind::deny);
	ASSERT_TRUE(deny);
	EXPECT_EQ(*deny, (std::vector<Cidr>{cidr("192.0.2.0/24"), cidr("2001:db8::/32")}));

	// The next apply goes to set 0, and set 1 is cleared: no entry, no
	// record, no port block left of it.
	CompiledPolicy next = two_classes();
	next.ids.names[2].clear();
	next.classes[2] = {};
	next.prefixes_v4.clear();
	next.class_flags = SLUICE_CLASS_PORTS;
	a = tables->apply(next, PolicyLists{{}, {cidr("192.0.2.0/25")}});
	ASSERT_TRUE(a) << a.error().describe();
	EXPECT_EQ(a->set, 0u);
	EXPECT_EQ(config().policy_flags, SLUICE_CLASS_PORTS | SLUICE_LIST_DENY_V4);
	EXPECT_TRUE(trie<sluice_lpm_v4>(SLUICE_PIN_CLASS_V4).empty());
	EXPECT_TRUE(trie<sluice_lpm_v4>(SLUICE_PIN_ALLOW_V4).empty());
	EXPECT_EQ(trie<sluice_lpm_v4>(SLUICE_PIN_DENY_V4), (Trie4{{0, "192.0.2.0/25"}}));
	EXPECT_TRUE(trie<sluice_lpm_v6>(SLUICE_PIN_DENY_V6).empty());
	EXPECT_EQ(class_name(1, 1), "");
	EXPECT_EQ(port_class(1, SLUICE_L4_UDP, 53), 0u);
	EXPECT_EQ(class_name(0, 1), "dns");
	EXPECT_EQ(class_name(0, 2), "");
	EXPECT_EQ(port_class(0, SLUICE_L4_UDP, 53), 1u);
}

TEST_F(PolicyTablesTest, TheConfigEditGoesInTheFlipsWrite)
{
	uint64_t gen = config().generation;
	auto a = tables->apply(two_classes(), {}, [](const sluice_config &c) -> Result<sluice_config> {
		BudgetAsk ask = budgets_of(c);
		ask.rate_pps = 77;
		ask.burst = 88;
		return config_with_budgets(c, ask, 1);
	});
	ASSERT_TRUE(a) << a.error().describe();
	sluice_config cfg = config();
	EXPECT_EQ(cfg.generation, gen + 1);
	EXPECT_EQ(cfg.rate_pps, 77u);
	EXPECT_EQ(cfg.burst, 88u);
	EXPECT_EQ(SLUICE_POLICY_SET_OF(cfg.policy_flags), 1u);
}

TEST_F(PolicyTablesTest, AFailureBeforeTheFlipChangesNothingInForce)
{
	PolicyLists lists{{}, {cidr("192.0.2.0/24")}};
	ASSERT_TRUE(tables->apply(two_classes(), lists));
	sluice_config before = config();
	// A config edit that refuses: everything written into set 0 is removed.
	auto a = tables->apply(two_classes(999), PolicyLists{{}, {cidr("198.18.0.0/24")}},
			       [](const sluice_config &) -> Result<sluice_config> { return refused("no"); });
	ASSERT_FALSE(a);
	EXPECT_NE(a.error().message.find("the policy in force is unchanged"), std::string::npos) << a.error().message;
	sluice_config after = config();
	EXPECT_EQ(after.generation, before.generation);
	EXPECT_EQ(after.policy_flags, before.policy_flags);
	EXPECT_EQ(trie<sluice_lpm_v4>(SLUICE_PIN_DENY_V4), (Trie4{{1, "192.0.2.0/24"}}));
	EXPECT_EQ(trie<sluice_lpm_v4>(SLUICE_PIN_CLASS_V4), (Trie4{{1, "198.51.100.0/24"}}));
	EXPECT_EQ(class_name(0, 1), "");
	EXPECT_EQ(class_name(1, 1), "dns");
	EXPECT_EQ(port_class(0, SLUICE_L4_UDP, 53), 0u);
}

TEST_F(PolicyTablesTest, AFullTrieRefusesTheWholePolicy)
{
	// More allow prefixes than a set holds (PrefixLists bounds each set to
	// SLUICE_LIST_MAX_ENTRIES a family): refused, the set in force untouched.
	PolicyLists small{{cidr("203.0.113.0/24")}, {}};
	ASSERT_TRUE(tables->apply(two_classes(), small));
	sluice_config before = config();
	PolicyLists huge;
	for (uint32_t i = 0; i <= SLUICE_LIST_MAX_ENTRIES; i++) {
		Cidr c = cidr("10.0.0.0/32");
		uint32_t a = (10u << 24) | i;
		for (int b = 0; b < 4; b++)
			c.addr.bytes[b] = uint8_t(a >> (24 - 8 * b));
		huge.allow.push_back(c);
	}
	auto a = tables->apply(two_classes(), huge);
	ASSERT_FALSE(a);
	EXPECT_NE(a.error().message.find("at most 65536 prefixes per family"), std::string::npos) << a.error().message;
	EXPECT_NE(a.error().message.find("the policy in force is unchanged"), std::string::npos) << a.error().message;
	EXPECT_EQ(config().generation, before.generation);
	EXPECT_EQ(trie<sluice_lpm_v4>(SLUICE_PIN_ALLOW_V4), (Trie4{{1, "203.0.113.0/24"}}));
}

TEST_F(PolicyTablesTest, TimeToApply65536Prefixes)
{
	CompiledPolicy c = two_classes();
	PolicyLists lists;
	for (uint32_t i = 0; i < SLUICE_LIST_MAX_ENTRIES; i++) {
		sluice_class_matches m{};
		m.count = 1;
		m.m[0] = {0, 65535, 0xf, 2, {}};
		Cidr p = cidr("10.0.0.0/32");
		uint32_t a = (10u << 24) | i;
		for (int b = 0; b < 4; b++)
			p.addr.bytes[b] = uint8_t(a >> (24 - 8 * b));
		c.prefixes_v4.push_back({p, m});
		lists.deny.push_back(p);
	}
	c.prefixes_v4.erase(c.prefixes_v4.begin()); // 198.51.100.0/24 out: exactly 65,536
	ASSERT_TRUE(tables->apply(c, lists));
	auto t0 = std::chrono::steady_clock::now();
	auto a = tables->apply(c, lists); // the reload: writes 2 x 65,536, clears 2 x 65,536
	double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	ASSERT_TRUE(a) << a.error().describe();
	std::printf("POLICY TABLES apply of 65536 class prefixes + 65536 deny entries (and clearing as many): %.3f s\n", s);
	EXPECT_LT(s, 3.0);
}

} // namespace
