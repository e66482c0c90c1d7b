// The allow and deny lists through the control plane's PrefixLists on a real
// program: runtime writes go to the policy set in force, the list bits of
// config.policy_flags follow that set's entries and keep the class and set
// bits, one set's entries never show in (or leave) the other, and each trie
// holds SLUICE_LIST_MAX_ENTRIES prefixes of each set (a list's whole
// addresses, in a hash map beside its trie, counted with it): the count an add is
// checked against stays true through removes, a reload's write, flip and
// clear, and is counted afresh by a PrefixLists opened on the same pins.
#include "fixture.h"
#include "require.h"

#include "bpf/dataplane.h"
#include "bpf/maps.h"
#include "bpf/policy_tables.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using namespace sluice;
using sluice::test::run_prog;
namespace frames = sluice::frames;

Dataplane load()
{
	auto dp = Dataplane::load(LoadOptions{}, sluice::test::make_config(1000, 100, 1000, 50));
	if (!dp)
		throw std::runtime_error(dp.error().describe());
	return std::move(*dp);
}

Cidr cidr(const char *text)
{
	auto c = parse_cidr(text);
	if (!c)
		throw std::runtime_error(std::string("not a CIDR: ") + text);
	return *c;
}

// SLUICE_LIST_MAX_ENTRIES distinct IPv4 /24s under 10.0.0.0/8: a full list.
std::vector<Cidr> full_list()
{
	std::vector<Cidr> many;
	for (uint32_t i = 0; i < SLUICE_LIST_MAX_ENTRIES; i++) {
		Cidr c{};
		c.addr.family = Family::v4;
		c.addr.bytes[0] = 10;
		c.addr.bytes[1] = uint8_t(i >> 8);
		c.addr.bytes[2] = uint8_t(i);
		c.prefix = 24;
		many.push_back(c);
	}
	return many;
}

std::vector<std::string> strs(const Result<std::vector<Cidr>> &r)
{
	std::vector<std::string> out;
	if (r)
		for (const auto &c : *r)
			out.push_back(c.str());
	std::sort(out.begin(), out.end());
	return out;
}

uint32_t flags(const Dataplane &dp)
{
	return dp.config().read()->policy_flags;
}

// The verdict of one UDP frame from src through the loaded (unattached) program.
uint32_t verdict(const Dataplane &dp, const char *src)
{
	auto r = run_prog(dp.prog_fd(), frames::udp4({}, {.src = frames::ip4(src)}));
	EXPECT_EQ(r.err, 0);
	return r.retval;
}

TEST(PrefixLists, RuntimeWritesGoToTheSetInForceAndItsFlagsFollow)
{
	SLUICE_REQUIRE_ROOT();
	Dataplane dp = load();
	auto lists = dp.lists();
	Cidr a = cidr("198.18.5.0/24"), b = cidr("198.18.6.0/24"), v6 = cidr("2001:2:7::/48");

	ASSERT_TRUE(lists.add(ListKind::deny, std::span(&a, 1)));
	EXPECT_EQ(strs(lists.entries(ListKind::deny)), std::vector<std::string>{"198.18.5.0/24"});
	EXPECT_EQ(flags(dp), uint32_t(SLUICE_LIST_DENY_V4));
	EXPECT_EQ(verdict(dp, "198.18.5.1"), uint32_t(XDP_DROP));
	EXPECT_EQ(verdict(dp, "198.18.6.1"), uint32_t(XDP_PASS));

	// A reload's flip, by hand: set 1 in force with a class flag and no
	// lists. Set 0's entry is no longer the list in force, nor enforced.
	sluice_config c = *dp.config().read();
	c.policy_flags = SLUICE_POLICY_SET | SLUICE_CLASS_PORTS;
	ASSERT_TRUE(dp.config().write(c));
	EXPECT_TRUE(strs(lists.entries(ListKind::deny)).empty());
	EXPECT_EQ(strs(lists.entries(ListKind::deny, 0)), std::vector<std::string>{"198.18.5.0/24"});
	EXPECT_EQ(verdict(dp, "198.18.5.1"), uint32_t(XDP_PASS));

	// sync_flags: set 1 holds nothing, the class and set bits stay.
	ASSERT_TRUE(lists.sync_flags());
	EXPECT_EQ(flags(dp), SLUICE_POLICY_SET | SLUICE_CLASS_PORTS);

	// A runtime add now writes set 1, and only set 1's bits move.
	Cidr both[] = {b, v6};
	ASSERT_TRUE(lists.add(ListKind::deny, both));
	EXPECT_EQ(strs(lists.entries(ListKind::deny)), (std::vector<std::string>{"198.18.6.0/24", "2001:2:7::/48"}));
	EXPECT_EQ(strs(lists.entries(ListKind::deny, 0)), std::vector<std::string>{"198.18.5.0/24"});
	EXPECT_EQ(flags(dp), SLUICE_POLICY_SET | SLUICE_CLASS_PORTS | SLUICE_LIST_DENY_V4 | SLUICE_LIST_DENY_V6);
	EXPECT_EQ(verdict(dp, "198.18.6.1"), uint32_t(XDP_DROP));
	EXPECT_EQ(verdict(dp, "198.18.5.1"), uint32_t(XDP_PASS));

	// Removing what only set 0 holds is refused: it is not in the list in force.
	auto gone = lists.remove(ListKind::deny, std::span(&a, 1));
	ASSERT_FALSE(gone);
	EXPECT_NE(gone.error().message.find("not in the deny list"), std::string::npos) << gone.error().message;

	// clear(0): the old set's entries go, set 1's stay, config untouched.
	EXPECT_EQ(lists.list_flags(0), uint32_t(SLUICE_LIST_DENY_V4));
	ASSERT_TRUE(lists.clear(0));
	EXPECT_EQ(lists.list_flags(0), 0u);
	EXPECT_EQ(lists.list_flags(1), uint32_t(SLUICE_LIST_DENY_V4 | SLUICE_LIST_DENY_V6));
	EXPECT_TRUE(strs(lists.entries(ListKind::deny, 0)).empty());
	EXPECT_EQ(strs(lists.entries(ListKind::deny)).size(), 2u);

	// insert() into the set not in force leaves config as it was.
	uint64_t gen = dp.config().read()->generation;
	ASSERT_TRUE(lists.insert(ListKind::allow, 0, std::span(&a, 1)));
	EXPECT_EQ(dp.config().read()->generation, gen);
	EXPECT_EQ(lists.list_flags(0), uint32_t(SLUICE_LIST_ALLOW_V4));
	EXPECT_TRUE(strs(lists.entries(ListKind::allow)).empty());

	// Removing the last v4 entry of set 1 clears its bit only.
	ASSERT_TRUE(lists.remove(ListKind::deny, std::span(&b, 1)));
	EXPECT_EQ(flags(dp), SLUICE_POLICY_SET | SLUICE_CLASS_PORTS | SLUICE_LIST_DENY_V6);
}

uint32_t verdict6(const Dataplane &dp, const char *src)
{
	auto r = run_prog(dp.prog_fd(), frames::udp6({}, {.src = frames::ip6(src)}));
	EXPECT_EQ(r.err, 0);
	return r.retval;
}

TEST(PrefixLists, ADenyListsWholeAddressesGoToTheExactMapsAndAreDeniedThere)
{
	SLUICE_REQUIRE_ROOT();
	Dataplane dp = load();
	auto lists = dp.lists();
	Cidr one4 = cidr("198.18.9.9/32"), one6 = cidr("2001:2:9::9/128"), net4 = cidr("198.18.10.0/24");
	Cidr all[] = {one4, one6, net4};

	ASSERT_TRUE(lists.add(ListKind::deny, all));
	// The whole addresses' bits, and the trie's for the /24 only: no
	// IPv6 prefix, so no IPv6 trie lookup.
	EXPECT_EQ(flags(dp) & ~SLUICE_POLICY_SET,
		  uint32_t(SLUICE_LIST_DENY_EXACT_V4 | SLUICE_LIST_DENY_EXACT_V6 | SLUICE_LIST_DENY_V4));
	EXPECT_EQ(strs(lists.entries(ListKind::deny)),
		  (std::vector<std::string>{"198.18.10.0/24", "198.18.9.9/32", "2001:2:9::9/128"}));
	EXPECT_EQ(verdict(dp, "198.18.9.9"), uint32_t(XDP_DROP));
	EXPECT_EQ(verdict(dp, "198.18.9.8"), uint32_t(XDP_PASS));
	EXPECT_EQ(verdict(dp, "198.18.10.77"), uint32_t(XDP_DROP));
	EXPECT_EQ(verdict6(dp, "2001:2:9::9"), uint32_t(XDP_DROP));
	EXPECT_EQ(verdict6(dp, "2001:2:9::8"), uint32_t(XDP_PASS));

	// The other set's whole address is not this set's: still passed.
	Cidr other = cidr("198.18.9.10/32");
	uint32_t set = SLUICE_POLICY_SET_OF(flags(dp));
	ASSERT_TRUE(lists.insert(ListKind::deny, set ^ 1, std::span(&other, 1)));
	EXPECT_EQ(verdict(dp, "198.18.9.10"), uint32_t(XDP_PASS));
	EXPECT_EQ(lists.list_flags(set ^ 1), uint32_t(SLUICE_LIST_DENY_EXACT_V4));

	// The same /32 allowlisted goes to the allow list's exact map, not the deny list's.
	ASSERT_TRUE(lists.add(ListKind::allow, std::span(&one4, 1)));
	EXPECT_EQ(flags(dp) & (SLUICE_LIST_ALLOW_V4 | SLUICE_LIST_ALLOW_EXACT_V4), uint32_t(SLUICE_LIST_ALLOW_EXACT_V4));
	EXPECT_EQ(strs(lists.entries(ListKind::allow)), std::vector<std::string>{"198.18.9.9/32"});
	EXPECT_EQ(verdict(dp, "198.18.9.9"), uint32_t(XDP_DROP)); // deny wins

	// Removing the whole addresses clears their bits; the /24 stays.
	Cidr whole[] = {one4, one6};
	ASSERT_TRUE(lists.remove(ListKind::deny, whole));
	EXPECT_EQ(flags(dp) & (SLUICE_LIST_DENY_EXACT_V4 | SLUICE_LIST_DENY_EXACT_V6 | SLUICE_LIST_DENY_V4),
		  uint32_t(SLUICE_LIST_DENY_V4));
	EXPECT_EQ(verdict(dp, "198.18.9.9"), uint32_t(XDP_PASS));
	EXPECT_EQ(verdict6(dp, "2001:2:9::9"), uint32_t(XDP_PASS));
	EXPECT_EQ(verdict(dp, "198.18.10.77"), uint32_t(XDP_DROP));
	auto gone = lists.remove(ListKind::deny, std::span(&one4, 1));
	ASSERT_FALSE(gone);
	EXPECT_NE(gone.error().message.find("198.18.9.9/32 is not in the deny list"), std::string::npos)
		<< gone.error().message;
}

uint64_t allowlisted(const Dataplane &dp)
{
	auto c = dp.counters().read();
	EXPECT_TRUE(c) << c.error().describe();
	return c ? (*c)[SLUICE_ALLOWLISTED].packets : 0;
}

TEST(PrefixLists, AnAllowListsWholeAddressesGoToTheExactMapsAndPassWhileShedding)
{
	SLUICE_REQUIRE_ROOT();
	Dataplane dp = load();
	auto lists = dp.lists();
	Cidr one4 = cidr("198.18.9.9/32"), one6 = cidr("2001:2:9::9/128"), net4 = cidr("198.18.10.0/24");
	Cidr all[] = {one4, one6, net4};

	ASSERT_TRUE(lists.add(ListKind::allow, all));
	EXPECT_EQ(flags(dp) & ~SLUICE_POLICY_SET,
		  uint32_t(SLUICE_LIST_ALLOW_EXACT_V4 | SLUICE_LIST_ALLOW_EXACT_V6 | SLUICE_LIST_ALLOW_V4));
	EXPECT_EQ(strs(lists.entries(ListKind::allow)),
		  (std::vector<std::string>{"198.18.10.0/24", "198.18.9.9/32", "2001:2:9::9/128"}));
	EXPECT_TRUE(strs(lists.entries(ListKind::deny)).empty());

	// Shedding (no newcomer budget): the listed pass as allowlisted, their
	// neighbours are shed.
	sluice_config c = *dp.config().read();
	c.breaker_state = SLUICE_SHEDDING;
	ASSERT_TRUE(dp.config().write(c));
	EXPECT_EQ(verdict(dp, "198.18.9.9"), uint32_t(XDP_PASS));
	EXPECT_EQ(verdict(dp, "198.18.10.77"), uint32_t(XDP_PASS));
	EXPECT_EQ(verdict6(dp, "2001:2:9::9"), uint32_t(XDP_PASS));
	EXPECT_EQ(allowlisted(dp), 3u);
	EXPECT_EQ(verdict(dp, "198.18.9.8"), uint32_t(XDP_DROP));
	EXPECT_EQ(verdict6(dp, "2001:2:9::8"), uint32_t(XDP_DROP));
	EXPECT_EQ(allowlisted(dp), 3u);

	// The other set's whole address is not this set's.
	Cidr other = cidr("198.18.9.10/32");
	uint32_t set = SLUICE_POLICY_SET_OF(flags(dp));
	ASSERT_TRUE(lists.insert(ListKind::allow, set ^ 1, std::span(&other, 1)));
	EXPECT_EQ(lists.list_flags(set ^ 1), uint32_t(SLUICE_LIST_ALLOW_EXACT_V4));
	EXPECT_EQ(verdict(dp, "198.18.9.10"), uint32_t(XDP_DROP));

	// Removing the whole addresses clears their bits and sheds them; the /24 stays.
	Cidr whole[] = {one4, one6};
	ASSERT_TRUE(lists.remove(ListKind::allow, whole));
	EXPECT_EQ(flags(dp) & (SLUICE_LIST_ALLOW_EXACT_V4 | SLUICE_LIST_ALLOW_EXACT_V6 | SLUICE_LIST_ALLOW_V4),
		  uint32_t(SLUICE_LIST_ALLOW_V4));
	EXPECT_EQ(verdict(dp, "198.18.9.9"), uint32_t(XDP_DROP));
	EXPECT_EQ(verdict6(dp, "2001:2:9::9"), uint32_t(XDP_DROP));
	EXPECT_EQ(verdict(dp, "198.18.10.77"), uint32_t(XDP_PASS));
	auto gone = lists.remove(ListKind::allow, std::span(&one6, 1));
	ASSERT_FALSE(gone);
	EXPECT_NE(gone.error().message.find("2001:2:9::9/128 is not in the allow list"), std::string::npos)
		<< gone.error().message;
}

TEST(PrefixLists, TheBoundCountsAFamilysTrieAndExactMapTogether)
{
	SLUICE_REQUIRE_ROOT();
	Dataplane dp = load();
	auto lists = dp.lists();
	std::vector<Cidr> many = full_list(); // /24s: the trie
	ASSERT_TRUE(lists.add(ListKind::deny, std::span(many.data(), many.size() - 1)));
	Cidr whole = cidr("198.18.0.1/32"), more = cidr("198.18.0.2/32");
	ASSERT_TRUE(lists.add(ListKind::deny, std::span(&whole, 1))); // the last of the bound, in the exact map
	auto over = lists.add(ListKind::deny, std::span(&more, 1));
	ASSERT_FALSE(over);
	EXPECT_NE(over.error().message.find("beside the 65536 of the deny list"), std::string::npos)
		<< over.error().message;
	// entries() reads both maps.
	auto pins = dp.lists();
	EXPECT_EQ(pins.entries(ListKind::deny)->size(), size_t(SLUICE_LIST_MAX_ENTRIES));
}

TEST(PrefixLists, EachTrieHoldsTheBoundOfEachSet)
{
	SLUICE_REQUIRE_ROOT();
	Dataplane dp = load();
	auto lists = dp.lists();
	std::vector<Cidr> many = full_list();
	ASSERT_TRUE(lists.insert(ListKind::deny, 0, many));
	Cidr one = cidr("198.18.0.0/16");
	auto over = lists.insert(ListKind::deny, 0, std::span(&one, 1));
	ASSERT_FALSE(over);
	EXPECT_EQ(over.error().kind, ErrorKind::refused);
	EXPECT_NE(over.error().message.find("at most 65536 prefixes per family"), std::string::npos)
		<< over.error().message;
	EXPECT_NE(over.error().message.find("nothing was added"), std::string::npos) << over.error().message;
	// The other set has room for a whole list beside it (a reload's).
	ASSERT_TRUE(lists.insert(ListKind::deny, 1, many));
	over = lists.insert(ListKind::deny, 1, std::span(&one, 1));
	ASSERT_FALSE(over);
	EXPECT_EQ(lists.entries(ListKind::deny, 1)->size(), size_t(SLUICE_LIST_MAX_ENTRIES));
	ASSERT_TRUE(lists.clear(1));
	EXPECT_EQ(lists.entries(ListKind::deny, 0)->size(), size_t(SLUICE_LIST_MAX_ENTRIES));
	EXPECT_TRUE(lists.entries(ListKind::deny, 1)->empty());
}

// Microseconds one call of f takes.
template <class F>
double micros(F &&f)
{
	auto t0 = std::chrono::steady_clock::now();
	f();
	return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

TEST(PrefixLists, AnAddAtTheBoundIsRefusedNamingItAndARemoveFreesRoom)
{
	SLUICE_REQUIRE_ROOT();
	Dataplane dp = load();
	std::vector<Cidr> many = full_list();
	ASSERT_TRUE(dp.lists().add(ListKind::deny, many));
	const sluice_config before = *dp.config().read();

	Cidr one = cidr("198.18.0.0/16"), two = cidr("198.19.0.0/16");
	Status over;
	double refused_us = micros([&] { over = dp.lists().add(ListKind::deny, std::span(&one, 1)); });
	ASSERT_FALSE(over);
	EXPECT_EQ(over.error().kind, ErrorKind::refused);
	EXPECT_NE(over.error().message.find("at most 65536 prefixes per family"), std::string::npos)
		<< over.error().message;
	EXPECT_NE(over.error().message.find("beside the 65536 of the deny list"), std::string::npos)
		<< over.error().message;
	EXPECT_NE(over.error().message.find("nothing was added"), std::string::npos) << over.error().message;
	EXPECT_EQ(dp.config().read()->generation, before.generation);
	EXPECT_EQ(dp.lists().entries(ListKind::deny)->size(), size_t(SLUICE_LIST_MAX_ENTRIES));
	EXPECT_EQ(verdict(dp, "198.18.0.1"), uint32_t(XDP_PASS));

	// The bound is per list and family: IPv6 deny and IPv4 allow have room.
	Cidr v6 = cidr("2001:2:7::/48");
	ASSERT_TRUE(dp.lists().add(ListKind::deny, std::span(&v6, 1)));
	ASSERT_TRUE(dp.lists().add(ListKind::allow, std::span(&two, 1)));

	// A remove frees room for one add, and no more; what the list holds
	// already takes none.
	ASSERT_TRUE(dp.lists().remove(ListKind::deny, std::span(&many[7], 1)));
	Status added;
	double added_us = micros([&] { added = dp.lists().add(ListKind::deny, std::span(&one, 1)); });
	ASSERT_TRUE(added) << added.error().describe();
	EXPECT_EQ(verdict(dp, "198.18.0.1"), uint32_t(XDP_DROP));
	EXPECT_FALSE(dp.lists().add(ListKind::deny, std::span(&two, 1)));
	EXPECT_TRUE(dp.lists().add(ListKind::deny, std::span(&many[8], 1)));
	EXPECT_EQ(dp.lists().entries(ListKind::deny)->size(), size_t(SLUICE_LIST_MAX_ENTRIES) + 1); // + the IPv6 one
	std::printf("PREFIX LISTS one runtime add beside a list of 65536 (refused): %.0f us; beside 65535 (added): "
		    "%.0f us\n",
		    refused_us, added_us);
}

TEST(PrefixLists, ASecondPrefixListsOnTheSamePinsCountsWhatTheyHold)
{
	SLUICE_REQUIRE_ROOT();
	Dataplane dp = load();
	std::vector<Cidr> many = full_list();
	ASSERT_TRUE(dp.lists().add(ListKind::deny, many));
	ASSERT_TRUE(dp.lists().insert(ListKind::deny, 1, std::span(many.data(), 3))); // the other set's, apart
	std::string dir = "/sys/fs/bpf/sluice-lists-test-" + std::to_string(getpid());
	ASSERT_TRUE(dp.pin(dir));
	auto open = [&](const char *pin) { return bpf_obj_get((dir + "/" + pin).c_str()); };
	int allow_v4 = open(SLUICE_PIN_ALLOW_V4), allow_v6 = open(SLUICE_PIN_ALLOW_V6),
	    deny_v4 = open(SLUICE_PIN_DENY_V4), deny_v6 = open(SLUICE_PIN_DENY_V6),
	    deny_exact_v4 = open(SLUICE_PIN_DENY_EXACT_V4), deny_exact_v6 = open(SLUICE_PIN_DENY_EXACT_V6),
	    allow_exact_v4 = open(SLUICE_PIN_ALLOW_EXACT_V4), allow_exact_v6 = open(SLUICE_PIN_ALLOW_EXACT_V6),
	    config = open(SLUICE_PIN_CONFIG);
	ASSERT_TRUE(dp.detach(dir)); // the pins go; the fds keep the maps
	ASSERT_GE(allow_v4, 0);
	ASSERT_GE(allow_v6, 0);
	ASSERT_GE(deny_v4, 0);
	ASSERT_GE(deny_v6, 0);
	ASSERT_GE(deny_exact_v4, 0);
	ASSERT_GE(deny_exact_v6, 0);
	ASSERT_GE(allow_exact_v4, 0);
	ASSERT_GE(allow_exact_v6, 0);
	ASSERT_GE(config, 0);
	PrefixLists adopted({allow_v4, allow_v6, deny_v4, deny_v6, deny_exact_v4, deny_exact_v6, allow_exact_v4, allow_exact_v6},
			    ConfigMap(config));

	Cidr one = cidr("198.18.0.0/16"), two = cidr("198.19.0.0/16");
	auto over = adopted.add(ListKind::deny, std::span(&one, 1));
	ASSERT_FALSE(over);
	EXPECT_NE(over.error().message.find("beside the 65536 of the deny list"), std::string::npos)
		<< over.error().message;
	ASSERT_TRUE(adopted.remove(ListKind::deny, std::span(&many[0], 1)));
	EXPECT_TRUE(adopted.add(ListKind::deny, std::span(&one, 1)));
	EXPECT_FALSE(adopted.add(ListKind::deny, std::span(&two, 1)));
	// Set 1 was counted apart: 3 of the bound.
	EXPECT_TRUE(adopted.insert(ListKind::deny, 1, std::span(many.data() + 3, SLUICE_LIST_MAX_ENTRIES - 3)));
	EXPECT_FALSE(adopted.insert(ListKind::deny, 1, std::span(&one, 1)));
	for (int fd : {allow_v4, allow_v6, deny_v4, deny_v6, deny_exact_v4, deny_exact_v6, allow_exact_v4, allow_exact_v6,
		       config})
		close(fd);
}

TEST(PrefixLists, AReloadsWriteFlipAndClearKeepTheCountTrue)
{
	SLUICE_REQUIRE_ROOT();
	Dataplane dp = load();
	auto m = dp.policy_maps();
	PolicyTables tables({m.classes, m.port_classes, m.class_v4, m.class_v6}, dp.lists(), dp.config());
	std::vector<Cidr> many = full_list();
	Cidr one = cidr("198.18.0.0/16");

	// Set 0 full at run time; a reload to a policy with no lists writes set
	// 1, flips, clears set 0: room again.
	ASSERT_TRUE(dp.lists().add(ListKind::deny, many));
	auto a = tables.apply(CompiledPolicy{}, PolicyLists{});
	ASSERT_TRUE(a) << a.error().describe();
	EXPECT_EQ(a->set, 1u);
	ASSERT_TRUE(dp.lists().add(ListKind::deny, std::span(&one, 1)));
	EXPECT_FALSE(dp.lists().add(ListKind::deny, many)); // 65535 new beside 1
	ASSERT_TRUE(dp.lists().remove(ListKind::deny, std::span(&one, 1)));
	ASSERT_TRUE(dp.lists().add(ListKind::deny, many));

	// A reload to a full deny list: set 0 (cleared before) takes all of it,
	// set 1's runtime entries are cleared after the flip.
	a = tables.apply(CompiledPolicy{}, PolicyLists{{}, many});
	ASSERT_TRUE(a) << a.error().describe();
	EXPECT_EQ(a->set, 0u);
	auto over = dp.lists().add(ListKind::deny, std::span(&one, 1));
	ASSERT_FALSE(over);
	EXPECT_NE(over.error().message.find("beside the 65536 of the deny list"), std::string::npos)
		<< over.error().message;
	a = tables.apply(CompiledPolicy{}, PolicyLists{});
	ASSERT_TRUE(a) << a.error().describe();
	EXPECT_TRUE(dp.lists().add(ListKind::deny, std::span(&one, 1)));
	EXPECT_EQ(dp.lists().entries(ListKind::deny, 0)->size(), 0u);
	EXPECT_EQ(dp.lists().entries(ListKind::deny, 1)->size(), 1u);
}

// Each entry's value says who put it there: a reload's file entries, the
// entries it kept, an operator's add (which makes a file entry theirs); a
// value that is not the file's mark (what was written before origins were
// kept was 1, the run-time mark) reads as added at run time, so it is kept.
TEST(PrefixLists, EachEntryKeepsWhoPutItThere)
{
	SLUICE_REQUIRE_ROOT();
	Dataplane dp = load();
	auto m = dp.policy_maps();
	PolicyTables tables({m.classes, m.port_classes, m.class_v4, m.class_v6}, dp.lists(), dp.config());
	using V = std::vector<std::string>;
	auto of = [&](ListOrigin o) { return strs(dp.lists().entries(ListKind::deny, o)); };

	auto a = tables.apply(CompiledPolicy{}, PolicyLists{{}, {cidr("192.0.2.0/24"), cidr("2001:db8::/32")}, {},
							   {cidr("198.51.100.0/24")}});
	ASSERT_TRUE(a) << a.error().describe();
	EXPECT_EQ(a->list_entries, 3u);
	EXPECT_EQ(of(ListOrigin::file), (V{"192.0.2.0/24", "2001:db8::/32"}));
	EXPECT_EQ(of(ListOrigin::run_time), (V{"198.51.100.0/24"}));
	EXPECT_EQ(strs(dp.lists().entries(ListKind::deny)), (V{"192.0.2.0/24", "198.51.100.0/24", "2001:db8::/32"}));
	EXPECT_EQ(verdict(dp, "198.51.100.9"), uint32_t(XDP_DROP)) << "a kept entry is enforced";

	Cidr added[] = {cidr("203.0.113.0/24"), cidr("192.0.2.0/24")};
	ASSERT_TRUE(dp.lists().add(ListKind::deny, added));
	EXPECT_EQ(of(ListOrigin::file), (V{"2001:db8::/32"}));
	EXPECT_EQ(of(ListOrigin::run_time), (V{"192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"}));

	// An entry with some other value, written straight into the trie
	std::string dir = "/sys/fs/bpf/sluice-origin-test-" + std::to_string(getpid());
	ASSERT_TRUE(dp.pin(dir));
	int deny_v4 = bpf_obj_get((dir + "/" + SLUICE_PIN_DENY_V4).c_str());
	ASSERT_TRUE(dp.detach(dir));
	ASSERT_GE(deny_v4, 0);
	sluice_lpm_v4 k{};
	k.prefixlen = SLUICE_LPM_SET_BITS + 16;
	k.set = uint8_t(a->set);
	k.addr[0] = 198, k.addr[1] = 18;
	uint8_t odd = 0;
	EXPECT_EQ(bpf_map_update_elem(deny_v4, &k, &odd, BPF_ANY), 0);
	close(deny_v4);
	EXPECT_EQ(of(ListOrigin::run_time), (V{"192.0.2.0/24", "198.18.0.0/16", "198.51.100.0/24", "203.0.113.0/24"}));
	EXPECT_EQ(of(ListOrigin::file), (V{"2001:db8::/32"}));
}

// A prefix inside a listed one is an entry of its own (a lookup in the trie
// would find the wider one and call it there): added, listed, enforced when
// the wider one goes, removed; one only covered is not in the list.
TEST(PrefixLists, APrefixInsideAListedOneIsItsOwnEntry)
{
	SLUICE_REQUIRE_ROOT();
	Dataplane dp = load();
	Cidr wide = cidr("198.18.0.0/16"), narrow = cidr("198.18.7.0/24"), covered = cidr("198.18.9.0/24");
	ASSERT_TRUE(dp.lists().add(ListKind::deny, std::span(&wide, 1)));
	ASSERT_TRUE(dp.lists().add(ListKind::deny, std::span(&narrow, 1)));
	EXPECT_EQ(strs(dp.lists().entries(ListKind::deny)), (std::vector<std::string>{"198.18.0.0/16", "198.18.7.0/24"}));

	auto gone = dp.lists().remove(ListKind::deny, std::span(&covered, 1));
	ASSERT_FALSE(gone);
	EXPECT_EQ(gone.error().kind, ErrorKind::invalid) << gone.error().describe();
	EXPECT_NE(gone.error().message.find("198.18.9.0/24 is not in the deny list"), std::string::npos)
		<< gone.error().message;

	ASSERT_TRUE(dp.lists().remove(ListKind::deny, std::span(&wide, 1)));
	EXPECT_EQ(verdict(dp, "198.18.7.1"), uint32_t(XDP_DROP));
	EXPECT_EQ(verdict(dp, "198.18.9.1"), uint32_t(XDP_PASS));
	Cidr twice[] = {narrow, narrow};
	ASSERT_TRUE(dp.lists().remove(ListKind::deny, twice));
	EXPECT_TRUE(strs(dp.lists().entries(ListKind::deny)).empty());
	EXPECT_EQ(flags(dp), 0u);
}

} // namespace
