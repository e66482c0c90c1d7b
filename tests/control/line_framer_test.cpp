// The control socket's line framing (ipc/line_framer.h) without a socket:
// bytes in as they might be read, request lines and over-long notices out.
#include "ipc/line_framer.h"
#include "ipc/protocol.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice {
namespace {

using Next = LineFramer::Next;

// Everything next() gives until none: lines as they are, "<too long>" for
// each over-long one.
std::vector<std::string> drain(LineFramer &f)
{
	std::vector<std::string> out;
	std::string line;
	for (Next n; (n = f.next(line)) != Next::none;)
		out.push_back(n == Next::line ? line : "<too long>");
	return out;
}

using Lines = std::vector<std::string>;

TEST(LineFramer, CutsLinesAndKeepsThePartialOne)
{
	LineFramer f(64);
	EXPECT_FALSE(f.append("{\"cmd\": \"status\"}\n{\"cmd\""));
	EXPECT_TRUE(f.has_line());
	EXPECT_EQ(drain(f), Lines{"{\"cmd\": \"status\"}"});
	EXPECT_FALSE(f.has_line());
	EXPECT_EQ(f.buffered(), 6u);
	EXPECT_FALSE(f.append(": \"stats\"}\nx\ny"));
	EXPECT_EQ(drain(f), (Lines{"{\"cmd\": \"stats\"}", "x"}));
	EXPECT_EQ(f.buffered(), 1u);
	EXPECT_FALSE(f.append("\n"));
	EXPECT_EQ(drain(f), Lines{"y"});
	EXPECT_EQ(f.buffered(), 0u);
}

TEST(LineFramer, BlankLinesAskNothing)
{
	LineFramer f(64);
	f.append("\n  \t\r\n\r\na\r\n\n");
	// A CR before the newline stays with the line (JSON takes it as space).
	EXPECT_EQ(drain(f), Lines{"a\r"});
}

TEST(LineFramer, ALineOfExactlyTheLimitIsALine)
{
	LineFramer f(8);
	EXPECT_FALSE(f.append("12345678")); // at the limit, unfinished: kept
	EXPECT_EQ(f.buffered(), 8u);
	f.append("\n");
	EXPECT_EQ(drain(f), Lines{"12345678"});
}

TEST(LineFramer, ACompleteOverLongLineIsReportedAndSkipped)
{
	LineFramer f(8);
	// The newline came with it: reported when its turn comes, between the
	// lines around it.
	EXPECT_FALSE(f.append("ok\n123456789\nnext\n"));
	EXPECT_EQ(drain(f), (Lines{"ok", "<too long>", "next"}));
}

TEST(LineFramer, AnUnfinishedOverLongLineIsReportedAtOnceAndDroppedAsItComes)
{
	LineFramer f(8);
	EXPECT_TRUE(f.append("123456789")); // over the limit, no newline yet
	EXPECT_EQ(f.buffered(), 0u) << "nothing of it is kept";
	EXPECT_EQ(drain(f), Lines{});
	// More of it: dropped, not reported again, nothing kept.
	EXPECT_FALSE(f.append(std::string(1000, 'x')));
	EXPECT_EQ(f.buffered(), 0u);
	EXPECT_EQ(drain(f), Lines{});
	// Its end, and the next line in the same read.
	EXPECT_FALSE(f.append("xx\nafter\n"));
	EXPECT_EQ(drain(f), Lines{"after"});
}

TEST(LineFramer, AnOverLongTailAfterACompleteLineWaitsForItsTurn)
{
	LineFramer f(8);
	// A complete line is waiting: the long tail is reported by next(), after it.
	EXPECT_FALSE(f.append("ok\n123456789"));
	EXPECT_EQ(drain(f), (Lines{"ok", "<too long>"}));
	EXPECT_EQ(f.buffered(), 0u);
	f.append("99\nthen\n");
	EXPECT_EQ(drain(f), Lines{"then"});
}

TEST(LineFramer, TheServersLimitIsTheProtocols)
{
	LineFramer f(kMaxLineBytes);
	EXPECT_FALSE(f.append(std::string(kMaxLineBytes, 'a')));
	EXPECT_TRUE(f.append("a"));
}

} // namespace
} // namespace sluice
