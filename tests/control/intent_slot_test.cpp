// The upstream worker's slot: the latest intent wins, at most one waits.
#include "upstream/intent_slot.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

using namespace sluice;
using namespace std::chrono_literals;

TEST(IntentSlot, TheLatestPostWinsAndOnlyOneIsHeld)
{
	IntentSlot<std::vector<std::string>> slot;
	EXPECT_FALSE(slot.pending());
	EXPECT_EQ(slot.post({"a"}), 1u);
	EXPECT_EQ(slot.post({"a", "b"}), 2u);
	EXPECT_EQ(slot.post({"c"}), 3u);
	EXPECT_TRUE(slot.pending());
	auto t = slot.take(0ms);
	ASSERT_TRUE(t);
	EXPECT_EQ(t->generation, 3u);
	EXPECT_EQ(t->intent, std::vector<std::string>{"c"});
	EXPECT_EQ(t->replaced, 2u); // two never taken
	EXPECT_FALSE(slot.pending());
	EXPECT_FALSE(slot.take(0ms)); // taken once only
}

TEST(IntentSlot, ManyPostsHoldOneIntent)
{
	IntentSlot<std::vector<int>> slot;
	for (int i = 0; i < 100000; i++)
		slot.post(std::vector<int>(3, i));
	auto t = slot.take(0ms);
	ASSERT_TRUE(t);
	EXPECT_EQ(t->intent, std::vector<int>(3, 99999));
	EXPECT_EQ(t->replaced, 99999u);
	EXPECT_EQ(t->generation, 100000u);
}

TEST(IntentSlot, TakeWaitsForAPostOrItsTimeout)
{
	IntentSlot<int> slot;
	auto t0 = std::chrono::steady_clock::now();
	EXPECT_FALSE(slot.take(50ms));
	EXPECT_GE(std::chrono::steady_clock::now() - t0, 45ms);
	std::thread poster([&] {
		std::this_thread::sleep_for(20ms);
		slot.post(7);
	});
	auto t = slot.take(10s);
	poster.join();
	ASSERT_TRUE(t);
	EXPECT_EQ(t->intent, 7);
	EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

TEST(IntentSlot, StopEndsAWaitAtOnceAndLeavesTheLastIntentForShutdown)
{
	IntentSlot<int> slot;
	auto t0 = std::chrono::steady_clock::now();
	std::thread stopper([&] {
		std::this_thread::sleep_for(20ms);
		slot.stop();
	});
	EXPECT_FALSE(slot.take(30s));
	stopper.join();
	EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
	EXPECT_TRUE(slot.stopping());
	slot.post(4);
	EXPECT_FALSE(slot.take(0ms)); // stopped: the worker takes nothing more
	EXPECT_EQ(slot.take_now(), 4);  // shutdown does
	EXPECT_FALSE(slot.take_now());
}

TEST(Published, ReadersGetTheLastPublishedCopy)
{
	Published<std::vector<int>> p;
	EXPECT_TRUE(p.read().empty());
	p.publish({1, 2});
	p.update([](std::vector<int> &v) { v.push_back(3); });
	EXPECT_EQ(p.read(), (std::vector<int>{1, 2, 3}));
}
