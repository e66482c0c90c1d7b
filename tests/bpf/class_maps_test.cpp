// bpf/class_maps: the readers of the classes and class_counters maps, against
// real kernel maps of the program's types (an array of struct sluice_class
// per policy set, a per-CPU array of struct sluice_counter), made here with
// bpf_map_create so that the test does not depend on a loaded program.
#include "require.h"

#include "bpf/class_maps.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cstring>
#include <vector>
#include <unistd.h>

namespace {

using namespace sluice;

struct MapFd {
	int fd = -1;
	explicit MapFd(int f) : fd(f) {}
	~MapFd()
	{
		if (fd >= 0)
			::close(fd);
	}
};

int classes_map()
{
	return bpf_map_create(BPF_MAP_TYPE_ARRAY, "test_classes", sizeof(uint32_t), sizeof(sluice_class),
			      SLUICE_POLICY_SETS * SLUICE_CLASSES_MAX, nullptr);
}

int class_counters_map()
{
	return bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "test_class_ctr", sizeof(uint32_t), sizeof(sluice_counter),
			      SLUICE_CLASS_COUNTER_KEYS, nullptr);
}

void put_class(int fd, uint32_t set, uint32_t id, const char *name, uint64_t rate)
{
	sluice_class c{};
	c.rate_pps = rate;
	c.cost_ns = SLUICE_NSEC_PER_SEC / rate;
	c.burst = 2 * rate;
	std::strncpy(c.name, name, sizeof(c.name));
	uint32_t index = set * SLUICE_CLASSES_MAX + id;
	ASSERT_EQ(bpf_map_update_elem(fd, &index, &c, BPF_ANY), 0);
}

TEST(ClassMaps, ReadsTheNamedClassesOfOneSetByIdAndLeavesFreeIdsOut)
{
	SLUICE_REQUIRE_ROOT();
	MapFd classes(classes_map());
	ASSERT_GE(classes.fd, 0) << std::strerror(errno);
	put_class(classes.fd, 0, 0, "default", 10000);
	put_class(classes.fd, 0, 3, "dns", 200);
	put_class(classes.fd, 0, 63, "a-name-of-32-characters-exactly_", 5);
	put_class(classes.fd, 1, 0, "default", 10000);
	put_class(classes.fd, 1, 7, "nat", 50000);

	auto set0 = read_classes(classes.fd, 0);
	ASSERT_TRUE(set0) << set0.error().describe();
	ASSERT_EQ(set0->size(), 3u);
	EXPECT_EQ((*set0)[0].id, 0u);
	EXPECT_EQ((*set0)[0].name, "default");
	EXPECT_EQ((*set0)[1].id, 3u);
	EXPECT_EQ((*set0)[1].name, "dns");
	EXPECT_EQ((*set0)[1].record.rate_pps, 200u);
	EXPECT_EQ((*set0)[1].record.burst, 400u);
	EXPECT_EQ((*set0)[2].id, 63u);
	EXPECT_EQ((*set0)[2].name, "a-name-of-32-characters-exactly_");

	auto set1 = read_classes(classes.fd, 1);
	ASSERT_TRUE(set1) << set1.error().describe();
	ASSERT_EQ(set1->size(), 2u);
	EXPECT_EQ((*set1)[1].id, 7u);
	EXPECT_EQ((*set1)[1].name, "nat");
	EXPECT_EQ((*set1)[1].record.rate_pps, 50000u);
}

TEST(ClassMaps, ANameThatFillsItsFieldIsReadWithoutATerminator)
{
	SLUICE_REQUIRE_ROOT();
	MapFd classes(classes_map());
	ASSERT_GE(classes.fd, 0) << std::strerror(errno);
	sluice_class c{};
	std::memset(c.name, 'x', sizeof(c.name));
	uint32_t index = 5;
	ASSERT_EQ(bpf_map_update_elem(classes.fd, &index, &c, BPF_ANY), 0);
	auto set0 = read_classes(classes.fd, 0);
	ASSERT_TRUE(set0) << set0.error().describe();
	ASSERT_EQ(set0->size(), 1u);
	EXPECT_EQ((*set0)[0].name, std::string(SLUICE_CLASS_NAME_BYTES, 'x'));
}

TEST(ClassMaps, AnEmptySetReadsAsNoClasses)
{
	SLUICE_REQUIRE_ROOT();
	MapFd classes(classes_map());
	ASSERT_GE(classes.fd, 0) << std::strerror(errno);
	auto set1 = read_classes(classes.fd, 1);
	ASSERT_TRUE(set1) << set1.error().describe();
	EXPECT_TRUE(set1->empty());
}

TEST(ClassMaps, ASetOtherThanZeroOrOneIsAnInputError)
{
	SLUICE_REQUIRE_ROOT();
	MapFd classes(classes_map());
	ASSERT_GE(classes.fd, 0) << std::strerror(errno);
	auto r = read_classes(classes.fd, 2);
	ASSERT_FALSE(r);
	EXPECT_EQ(r.error().kind, ErrorKind::invalid);
	EXPECT_NE(r.error().message.find("policy set 2"), std::string::npos) << r.error().message;
}

TEST(ClassMaps, AMapTooSmallIsASystemErrorNamingTheRecordAndErrno)
{
	SLUICE_REQUIRE_ROOT();
	// One set's worth only: set 1 is outside it.
	MapFd classes(bpf_map_create(BPF_MAP_TYPE_ARRAY, "test_classes", sizeof(uint32_t), sizeof(sluice_class),
				     SLUICE_CLASSES_MAX, nullptr));
	ASSERT_GE(classes.fd, 0) << std::strerror(errno);
	auto r = read_classes(classes.fd, 1);
	ASSERT_FALSE(r);
	EXPECT_EQ(r.error().kind, ErrorKind::system);
	EXPECT_EQ(r.error().code, ENOENT);
	EXPECT_NE(r.error().message.find("class 0 of policy set 1 (classes[64])"), std::string::npos)
		<< r.error().message;
}

TEST(ClassMaps, CountersAreSummedOverTheCpusOneRowPerId)
{
	SLUICE_REQUIRE_ROOT();
	MapFd counters(class_counters_map());
	ASSERT_GE(counters.fd, 0) << std::strerror(errno);
	int ncpu = libbpf_num_possible_cpus();
	ASSERT_GT(ncpu, 0);
	// Class 3's drop_rate: CPU i counted i + 1 packets of 100 bytes each.
	std::vector<sluice_counter> per_cpu(static_cast<size_t>(ncpu));
	uint64_t packets = 0;
	for (int i = 0; i < ncpu; i++) {
		per_cpu[i] = {static_cast<uint64_t>(i + 1), static_cast<uint64_t>(100 * (i + 1))};
		packets += i + 1;
	}
	uint32_t key = 3 * SLUICE_OUTCOMES + SLUICE_DROP_RATE;
	ASSERT_EQ(bpf_map_update_elem(counters.fd, &key, per_cpu.data(), BPF_ANY), 0);
	// The last key: class 63's last outcome.
	std::fill(per_cpu.begin(), per_cpu.end(), sluice_counter{1, 60});
	key = SLUICE_CLASS_COUNTER_KEYS - 1;
	ASSERT_EQ(bpf_map_update_elem(counters.fd, &key, per_cpu.data(), BPF_ANY), 0);

	auto rows = read_class_counters(counters.fd);
	ASSERT_TRUE(rows) << rows.error().describe();
	ASSERT_EQ(rows->size(), size_t(SLUICE_CLASSES_MAX));
	EXPECT_EQ((*rows)[3][SLUICE_DROP_RATE].packets, packets);
	EXPECT_EQ((*rows)[3][SLUICE_DROP_RATE].bytes, 100 * packets);
	EXPECT_EQ((*rows)[3][SLUICE_PASSED].packets, 0u);
	EXPECT_EQ((*rows)[63][SLUICE_OUTCOMES - 1].packets, uint64_t(ncpu));
	EXPECT_EQ((*rows)[63][SLUICE_OUTCOMES - 1].bytes, uint64_t(60 * ncpu));
	uint64_t total = 0;
	for (const auto &row : *rows)
		for (const auto &c : row)
			total += c.packets;
	EXPECT_EQ(total, packets + ncpu);
}

TEST(ClassMaps, ACounterMapTooSmallIsASystemErrorNamingTheKey)
{
	SLUICE_REQUIRE_ROOT();
	MapFd counters(bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "test_class_ctr", sizeof(uint32_t),
				      sizeof(sluice_counter), SLUICE_OUTCOMES, nullptr));
	ASSERT_GE(counters.fd, 0) << std::strerror(errno);
	auto r = read_class_counters(counters.fd);
	ASSERT_FALSE(r);
	EXPECT_EQ(r.error().code, ENOENT);
	EXPECT_NE(r.error().message.find("class 1, outcome passed (class_counters[" +
					  std::to_string(SLUICE_OUTCOMES) + "])"),
		  std::string::npos)
		<< r.error().message;
}

} // namespace
