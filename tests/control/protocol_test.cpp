// The control protocol's request parsing, typed argument getters, and replies.
#include "ipc/protocol.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace sluice {
namespace {

// `line` must be refused as invalid input with exactly `message`.
void expect_refused(const std::string &line, const std::string &message)
{
	SCOPED_TRACE(line.size() > 80 ? line.substr(0, 80) + "..." : line);
	auto r = parse_request(line);
	ASSERT_FALSE(r.has_value()) << "accepted, cmd " << r->cmd;
	EXPECT_EQ(r.error().kind, ErrorKind::invalid);
	EXPECT_EQ(r.error().code, 0);
	EXPECT_EQ(r.error().message, message);
}

Request request(const std::string &line)
{
	auto r = parse_request(line);
	EXPECT_TRUE(r.has_value()) << line << ": " << (r ? "" : r.error().message);
	return r ? *r : Request{};
}

template <class T>
void expect_invalid(const Result<T> &r, const std::string &message)
{
	ASSERT_FALSE(r.has_value()) << "accepted";
	EXPECT_EQ(r.error().kind, ErrorKind::invalid);
	EXPECT_EQ(r.error().message, message);
}

TEST(Protocol, ParsesAGoodRequest)
{
	auto r = parse_request(R"({"cmd": "breaker", "iface": "eth0", "to": "shedding"})");
	ASSERT_TRUE(r.has_value()) << r.error().message;
	EXPECT_EQ(r->cmd, "breaker");
	EXPECT_EQ(r->args["iface"], "eth0");
	EXPECT_EQ(r->args["to"], "shedding");
	// Whitespace around the object is fine.
	EXPECT_EQ(request("  {\"cmd\":\"status\"}  \r").cmd, "status");
}

TEST(Protocol, EveryDocumentedCommandIsKnown)
{
	for (const char *c : {"status", "stats", "breaker", "set", "bucket", "refill", "list_add", "list_del",
			      "list_show", "attach", "detach", "audit", "top"}) {
		EXPECT_TRUE(known_command(c)) << c;
		EXPECT_EQ(request(std::string(R"({"cmd":")") + c + "\"}").cmd, c);
	}
	for (const char *c : {"", "STATUS", "status ", "shutdown", "list"})
		EXPECT_FALSE(known_command(c)) << c;
}

TEST(Protocol, RefusesMalformedJson)
{
	expect_refused("", "request is not valid JSON");
	expect_refused("{", "request is not valid JSON");
	expect_refused(R"({"cmd": "status",})", "request is not valid JSON");
	expect_refused(R"({cmd: "status"})", "request is not valid JSON");
	expect_refused(R"({"cmd": "status"} {"cmd": "status"})", "request is not valid JSON");
	expect_refused("{\"cmd\": \"stat\xff\xfe\"}", "request is not valid JSON"); // invalid UTF-8
}

TEST(Protocol, RefusesNonObjects)
{
	for (const char *line : {"[]", R"(["status"])", R"("status")", "42", "null", "true"})
		expect_refused(line, "request must be a JSON object");
}

TEST(Protocol, RefusesMissingOrNonStringCmd)
{
	expect_refused("{}", "request needs \"cmd\" as a string");
	expect_refused(R"({"command": "status"})", "request needs \"cmd\" as a string");
	expect_refused(R"({"cmd": 1})", "request needs \"cmd\" as a string");
	expect_refused(R"({"cmd": null})", "request needs \"cmd\" as a string");
	expect_refused(R"({"cmd": ["status"]})", "request needs \"cmd\" as a string");
	expect_refused(R"({"cmd": {"name": "status"}})", "request needs \"cmd\" as a string");
}

TEST(Protocol, RefusesUnknownCommand)
{
	expect_refused(R"({"cmd": "shutdown"})", "unknown command 'shutdown'");
	expect_refused(R"({"cmd": ""})", "unknown command ''");
	expect_refused(R"({"cmd": "Status"})", "unknown command 'Status'");
}

TEST(Protocol, LineLengthLimit)
{
	// A valid request padded to exactly the limit is accepted...
	std::string head = R"({"cmd": "status", "pad": ")";
	std::string tail = "\"}";
	std::string line = head + std::string(kMaxLineBytes - head.size() - tail.size(), 'x') + tail;
	ASSERT_EQ(line.size(), kMaxLineBytes);
	EXPECT_TRUE(parse_request(line).has_value());
	// ... one byte more is not, whatever it holds.
	line = head + std::string(kMaxLineBytes + 1 - head.size() - tail.size(), 'x') + tail;
	expect_refused(line, "request line of 65537 bytes is over the limit of 65536");
	expect_refused(std::string(100 * 1024, '{'), "request line of 102400 bytes is over the limit of 65536");
	EXPECT_EQ(kMaxLineBytes, 65536u);
}

TEST(Protocol, StrGetter)
{
	auto r = request(R"({"cmd": "breaker", "iface": "eth0", "to": 3, "empty": ""})");
	auto iface = r.str("iface");
	ASSERT_TRUE(iface.has_value());
	EXPECT_EQ(*iface, "eth0");
	EXPECT_EQ(*r.str("empty"), "");
	EXPECT_EQ(*r.str("cmd"), "breaker");
	expect_invalid(r.str("to"), "\"to\" must be a string");
	expect_invalid(r.str("missing"), "'breaker' needs \"missing\"");
}

TEST(Protocol, OptStrGetter)
{
	auto r = request(R"({"cmd": "status", "iface": "eth0", "n": 1, "nul": null})");
	auto present = r.opt_str("iface");
	ASSERT_TRUE(present.has_value());
	ASSERT_TRUE(present->has_value());
	EXPECT_EQ(**present, "eth0");
	auto absent = r.opt_str("other");
	ASSERT_TRUE(absent.has_value());
	EXPECT_FALSE(absent->has_value());
	expect_invalid(r.opt_str("n"), "\"n\" must be a string");
	expect_invalid(r.opt_str("nul"), "\"nul\" must be a string");
}

TEST(Protocol, IntegerGetter)
{
	auto r = request(R"({"cmd": "refill", "n": -5, "big": 9223372036854775807, "huge": 9223372036854775808,
		"max": 18446744073709551615, "f": 1.5, "e": 1e3, "s": "5", "b": true, "nul": null})");
	EXPECT_EQ(*r.integer("n"), -5);
	EXPECT_EQ(*r.integer("big"), INT64_MAX);
	expect_invalid(r.integer("huge"), "\"huge\" is too large");
	expect_invalid(r.integer("max"), "\"max\" is too large");
	expect_invalid(r.integer("f"), "\"f\" must be an integer");
	expect_invalid(r.integer("e"), "\"e\" must be an integer");
	expect_invalid(r.integer("s"), "\"s\" must be an integer");
	expect_invalid(r.integer("b"), "\"b\" must be an integer");
	expect_invalid(r.integer("nul"), "\"nul\" must be an integer");
	expect_invalid(r.integer("missing"), "'refill' needs \"missing\"");
	// Beyond uint64: the parser makes a float of it, which is no integer.
	auto beyond = request(R"({"cmd": "refill", "n": 99999999999999999999999})");
	expect_invalid(beyond.integer("n"), "\"n\" must be an integer");
}

TEST(Protocol, OptIntegerGetter)
{
	auto r = request(R"({"cmd": "set", "rate": 100, "burst": "x", "huge": 18446744073709551615})");
	auto rate = r.opt_integer("rate");
	ASSERT_TRUE(rate.has_value());
	ASSERT_TRUE(rate->has_value());
	EXPECT_EQ(**rate, 100);
	auto absent = r.opt_integer("absent");
	ASSERT_TRUE(absent.has_value());
	EXPECT_FALSE(absent->has_value());
	expect_invalid(r.opt_integer("burst"), "\"burst\" must be an integer");
	expect_invalid(r.opt_integer("huge"), "\"huge\" is too large");
}

TEST(Protocol, StrListGetter)
{
	auto r = request(R"({"cmd": "list_add", "cidrs": ["198.18.0.0/15", "2001:2::/48"], "none": [],
		"mixed": ["198.18.0.0/15", 7], "nested": [["a"]], "scalar": "198.18.0.0/15", "obj": {"a": "b"}})");
	auto cidrs = r.str_list("cidrs");
	ASSERT_TRUE(cidrs.has_value());
	EXPECT_EQ(*cidrs, (std::vector<std::string>{"198.18.0.0/15", "2001:2::/48"}));
	auto none = r.str_list("none");
	ASSERT_TRUE(none.has_value());
	EXPECT_TRUE(none->empty());
	expect_invalid(r.str_list("mixed"), "\"mixed\" must be an array of strings");
	expect_invalid(r.str_list("nested"), "\"nested\" must be an array of strings");
	expect_invalid(r.str_list("scalar"), "\"scalar\" must be an array of strings");
	expect_invalid(r.str_list("obj"), "\"obj\" must be an array of strings");
	expect_invalid(r.str_list("missing"), "\"missing\" must be an array of strings");
}

TEST(Protocol, OkReplyShape)
{
	json empty = ok_reply();
	EXPECT_EQ(empty, json({{"ok", true}}));
	json body = ok_reply(json{{"iface", "eth0"}, {"state", "shedding"}});
	EXPECT_EQ(body, json({{"ok", true}, {"iface", "eth0"}, {"state", "shedding"}}));
	// A body that claims "ok": false is corrected.
	EXPECT_EQ(ok_reply(json{{"ok", false}})["ok"], true);
	// One line on the wire.
	EXPECT_EQ(body.dump().find('\n'), std::string::npos);
}

TEST(Protocol, ErrorReplyShape)
{
	json invalid_reply = error_reply(Error{ErrorKind::invalid, 0, "bad flag"});
	EXPECT_EQ(invalid_reply, json({{"ok", false}, {"error", "bad flag"}, {"kind", "invalid"}}));
	json refused_reply = error_reply(Error{ErrorKind::refused, 0, "invalid transition"});
	EXPECT_EQ(refused_reply, json({{"ok", false}, {"error", "invalid transition"}, {"kind", "refused"}}));
	// A system error carries strerror and the errno in its text.
	json sys = error_reply(Error{ErrorKind::system, ENOENT, "opening the pins"});
	EXPECT_EQ(sys["ok"], false);
	EXPECT_EQ(sys["kind"], "system");
	EXPECT_EQ(sys["error"], "opening the pins: " + std::string(std::strerror(ENOENT)) + " (errno 2)");
	EXPECT_EQ(sys.size(), 3u);
	// And the parse errors travel as such.
	auto bad = parse_request("nope");
	ASSERT_FALSE(bad.has_value());
	EXPECT_EQ(error_reply(bad.error()),
		  json({{"ok", false}, {"error", "request is not valid JSON"}, {"kind", "invalid"}}));
}

TEST(Protocol, KindNamesRoundTrip)
{
	EXPECT_STREQ(kind_name(ErrorKind::system), "system");
	EXPECT_STREQ(kind_name(ErrorKind::refused), "refused");
	EXPECT_STREQ(kind_name(ErrorKind::invalid), "invalid");
	for (auto k : {ErrorKind::system, ErrorKind::refused, ErrorKind::invalid}) {
		auto back = kind_from(kind_name(k));
		ASSERT_TRUE(back.has_value()) << kind_name(k);
		EXPECT_EQ(*back, k);
	}
	for (const char *bad : {"", "System", "error", "ok", "refused "})
		EXPECT_FALSE(kind_from(bad).has_value()) << bad;
}

TEST(Protocol, ExitCodesFollowKinds)
{
	EXPECT_EQ((Error{ErrorKind::invalid, 0, ""}).exit_code(), 2);
	EXPECT_EQ((Error{ErrorKind::refused, 0, ""}).exit_code(), 1);
	EXPECT_EQ((Error{ErrorKind::system, EPERM, ""}).exit_code(), 1);
}

// nlohmann-json stops at a NUL: the text after it must not be silently dropped.
TEST(Protocol, RefusesANulByte)
{
	std::string line = std::string("{\"cmd\":\"status\"}") + '\0' + "garbage";
	expect_refused(line, "request holds a NUL byte");
}

} // namespace
} // namespace sluice
