// Addresses and CIDR prefixes as operators type them.
#include "base/address.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

namespace sluice {
namespace {

Address v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	Address x;
	x.family = Family::v4;
	x.bytes = {a, b, c, d};
	return x;
}

void expect_bad_address(const std::string &text)
{
	auto r = parse_address(text);
	ASSERT_FALSE(r.has_value()) << "accepted '" << text << "' as " << r->str();
	EXPECT_EQ(r.error().kind, ErrorKind::invalid);
	EXPECT_EQ(r.error().message, "'" + text + "' is not an IPv4 or IPv6 address");
}

// `text` must be refused as a CIDR, with exactly `message` when given, else
// with a message that names the text.
void expect_bad_cidr(const std::string &text, const std::string &message = "")
{
	auto r = parse_cidr(text);
	ASSERT_FALSE(r.has_value()) << "accepted '" << text << "' as " << r->str();
	EXPECT_EQ(r.error().kind, ErrorKind::invalid);
	if (!message.empty())
		EXPECT_EQ(r.error().message, message);
	else
		EXPECT_NE(r.error().message.find(text), std::string::npos) << r.error().message;
}

TEST(Address, ParsesIPv4)
{
	auto r = parse_address("198.18.0.1");
	ASSERT_TRUE(r.has_value()) << r.error().message;
	EXPECT_EQ(r->family, Family::v4);
	EXPECT_EQ(*r, v4(198, 18, 0, 1));
	// Only the first four bytes are used; the rest stay zero.
	for (size_t i = 4; i < 16; i++)
		EXPECT_EQ(r->bytes[i], 0) << i;
	EXPECT_EQ(r->str(), "198.18.0.1");
	EXPECT_EQ(parse_address("0.0.0.0")->str(), "0.0.0.0");
	EXPECT_EQ(*parse_address("255.255.255.255"), v4(255, 255, 255, 255));
}

TEST(Address, ParsesIPv6)
{
	auto r = parse_address("2001:2::1");
	ASSERT_TRUE(r.has_value()) << r.error().message;
	EXPECT_EQ(r->family, Family::v6);
	std::array<uint8_t, 16> want{0x20, 0x01, 0x00, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};
	EXPECT_EQ(r->bytes, want);
	EXPECT_EQ(r->str(), "2001:2::1");
	// Text forms are normalised.
	EXPECT_EQ(parse_address("2001:0002:0000:0000:0000:0000:0000:0001")->str(), "2001:2::1");
	EXPECT_EQ(parse_address("2001:DB8::A")->str(), "2001:db8::a");
	EXPECT_EQ(parse_address("::")->str(), "::");
	// An IPv4-mapped address is IPv6.
	auto mapped = parse_address("::ffff:198.18.0.1");
	ASSERT_TRUE(mapped.has_value());
	EXPECT_EQ(mapped->family, Family::v6);
	EXPECT_NE(*mapped, v4(198, 18, 0, 1));
}

TEST(Address, FamiliesNeverCompareEqual)
{
	Address a = v4(0, 0, 0, 0);
	Address b = *parse_address("::");
	EXPECT_NE(a, b);
}

TEST(Address, RefusesGarbage)
{
	for (const char *bad : {"198.18.0", "198.18.0.256", "1.2.3.4.5", "198.18.0.-1", "abc", "localhost",
				"198.18.0.1/32", " 198.18.0.1", "198.18.0.1 ", "198.18.0.1\n", "2001:::1",
				"1:2:3:4:5:6:7:8:9", "2001:2::1::2", "fe80::1%eth0", "[2001:2::1]", "gggg::1", ":",
				"2001:2::1/64", "0x7f.0.0.1"})
		expect_bad_address(bad);
}

TEST(Address, RefusesUtf8Garbage)
{
	expect_bad_address("\xef\xbc\x91\xef\xbc\x99\xef\xbc\x98.18.0.1"); // fullwidth digits "１９８"
	expect_bad_address("198.18.0.1\xc3\xa9");                           // trailing "é"
	expect_bad_address("\xd9\xa1.\xd9\xa2.\xd9\xa3.\xd9\xa4");           // Arabic-Indic digits
	expect_bad_address("2001:2::\xe2\x80\x8b" "1");                      // zero-width space
	expect_bad_address("\xff\xfe\xfd");                                  // not UTF-8 at all
}

TEST(Address, RefusesEmbeddedNul)
{
	// The C parser stops at a NUL; the text as a whole is not an address.
	expect_bad_address(std::string("198.18.0.1\0junk", 15));
	expect_bad_address(std::string("2001:2::1\0", 10));
	auto r = parse_cidr(std::string("198.18.0.0\0/15", 14));
	EXPECT_FALSE(r.has_value());
}

TEST(Address, RefusesEmpty)
{
	expect_bad_address("");
	expect_bad_cidr("", "'' is not a CIDR prefix: '' is not an IPv4 or IPv6 address");
	expect_bad_cidr("/24", "'/24' is not a CIDR prefix: '' is not an IPv4 or IPv6 address");
}

TEST(Cidr, ParsesPrefixes)
{
	auto r = parse_cidr("198.18.0.0/15");
	ASSERT_TRUE(r.has_value()) << r.error().message;
	EXPECT_EQ(r->addr, v4(198, 18, 0, 0));
	EXPECT_EQ(r->prefix, 15u);
	EXPECT_EQ(r->str(), "198.18.0.0/15");

	auto r6 = parse_cidr("2001:2::/48");
	ASSERT_TRUE(r6.has_value()) << r6.error().message;
	EXPECT_EQ(r6->addr.family, Family::v6);
	EXPECT_EQ(r6->addr, *parse_address("2001:2::"));
	EXPECT_EQ(r6->prefix, 48u);
	EXPECT_EQ(r6->str(), "2001:2::/48");

	EXPECT_EQ(parse_cidr("0.0.0.0/0")->prefix, 0u);
	EXPECT_EQ(parse_cidr("::/0")->prefix, 0u);
	EXPECT_EQ(parse_cidr("198.18.0.1/32")->prefix, 32u);
	EXPECT_EQ(parse_cidr("2001:2::1/128")->prefix, 128u);
	EXPECT_EQ(parse_cidr("2001:db8::8000/113")->prefix, 113u); // the top bit of the last group is in the prefix
	EXPECT_EQ(parse_cidr("198.18.0.0/015")->prefix, 15u);
}

TEST(Cidr, BareAddressIsAHostPrefix)
{
	auto r = parse_cidr("198.18.0.1");
	ASSERT_TRUE(r.has_value()) << r.error().message;
	EXPECT_EQ(r->prefix, 32u);
	EXPECT_EQ(r->addr, v4(198, 18, 0, 1));
	EXPECT_EQ(r->str(), "198.18.0.1/32");
	auto r6 = parse_cidr("2001:2::1");
	ASSERT_TRUE(r6.has_value()) << r6.error().message;
	EXPECT_EQ(r6->prefix, 128u);
	EXPECT_EQ(r6->str(), "2001:2::1/128");
	EXPECT_EQ(*parse_cidr("198.18.0.1"), *parse_cidr("198.18.0.1/32"));
}

TEST(Cidr, StrRoundTrips)
{
	for (const char *text : {"198.18.0.0/15", "10.0.0.0/8", "0.0.0.0/0", "192.0.2.7/32", "2001:2::/48", "::/0",
				 "2001:db8:1:2::/64", "fe80::1/128"}) {
		auto r = parse_cidr(text);
		ASSERT_TRUE(r.has_value()) << text << ": " << r.error().message;
		EXPECT_EQ(r->str(), text);
		EXPECT_EQ(*parse_cidr(r->str()), *r);
	}
}

TEST(Cidr, RefusesPrefixOutOfRange)
{
	expect_bad_cidr("198.18.0.0/33", "'198.18.0.0/33': prefix length must be 0..32");
	expect_bad_cidr("198.18.0.0/128", "'198.18.0.0/128': prefix length must be 0..32");
	expect_bad_cidr("2001:2::/129", "'2001:2::/129': prefix length must be 0..128");
	expect_bad_cidr("198.18.0.0/4294967311", "'198.18.0.0/4294967311': prefix length must be 0..32"); // 2^32 + 15
	expect_bad_cidr("198.18.0.0/99999999999999999999", "'198.18.0.0/99999999999999999999': prefix length must be 0..32");
}

TEST(Cidr, RefusesNonNumericPrefix)
{
	for (const char *bad : {"198.18.0.0/", "198.18.0.0/abc", "198.18.0.0/-1", "198.18.0.0/+15", "198.18.0.0/15/16",
				"198.18.0.0/ 15", "198.18.0.0/15 ", "198.18.0.0/15a", "198.18.0.0/0x10", "198.18.0.0/1.5",
				"198.18.0.0/\xef\xbc\x91\xef\xbc\x95", "2001:2::/4\xc3\xa9"})
		expect_bad_cidr(bad, "'" + std::string(bad) + "': prefix length must be 0.." +
					     (std::string(bad).find(':') != std::string::npos ? "128" : "32"));
}

TEST(Cidr, RefusesGarbageAddress)
{
	expect_bad_cidr("banana/24", "'banana/24' is not a CIDR prefix: 'banana' is not an IPv4 or IPv6 address");
	expect_bad_cidr("198.18.0/24");
	expect_bad_cidr("198.18.0.0.0/24");
	expect_bad_cidr("\xef\xbc\x91\xef\xbc\x99\xef\xbc\x98.18.0.0/15");
	expect_bad_cidr("2001:::/48");
}

TEST(Cidr, HostBitsSetSuggestsTheMaskedPrefix)
{
	expect_bad_cidr("198.18.0.1/15", "CIDR 198.18.0.1/15 has host bits set; did you mean 198.18.0.0/15?");
	expect_bad_cidr("198.19.255.255/15", "CIDR 198.19.255.255/15 has host bits set; did you mean 198.18.0.0/15?");
	expect_bad_cidr("10.1.2.3/8", "CIDR 10.1.2.3/8 has host bits set; did you mean 10.0.0.0/8?");
	expect_bad_cidr("192.0.2.129/25", "CIDR 192.0.2.129/25 has host bits set; did you mean 192.0.2.128/25?");
	expect_bad_cidr("10.0.0.1/0", "CIDR 10.0.0.1/0 has host bits set; did you mean 0.0.0.0/0?");
	expect_bad_cidr("2001:2::1/48", "CIDR 2001:2::1/48 has host bits set; did you mean 2001:2::/48?");
	expect_bad_cidr("2001:db8::4000/113", "CIDR 2001:db8::4000/113 has host bits set; did you mean 2001:db8::/113?");
	expect_bad_cidr("2001:db8:1:2:3::/64",
			"CIDR 2001:db8:1:2:3::/64 has host bits set; did you mean 2001:db8:1:2::/64?");
	expect_bad_cidr("::1/127", "CIDR ::1/127 has host bits set; did you mean ::/127?");
	// Every suggestion is itself accepted.
	auto suggested = parse_cidr("198.18.0.0/15");
	EXPECT_TRUE(suggested.has_value());
}

TEST(Cidr, EveryPrefixLengthMasksExactly)
{
	// 255.255.255.255/p has host bits set for every p < 32, and the
	// suggestion keeps exactly p ones.
	for (uint32_t p = 0; p < 32; p++) {
		auto r = parse_cidr("255.255.255.255/" + std::to_string(p));
		ASSERT_FALSE(r.has_value()) << p;
		uint32_t mask = p == 0 ? 0 : ~0u << (32 - p);
		Address want = v4(mask >> 24, (mask >> 16) & 0xff, (mask >> 8) & 0xff, mask & 0xff);
		EXPECT_NE(r.error().message.find("did you mean " + want.str() + "/" + std::to_string(p) + "?"),
			  std::string::npos)
			<< r.error().message;
		EXPECT_TRUE(parse_cidr(want.str() + "/" + std::to_string(p)).has_value()) << p;
	}
	EXPECT_TRUE(parse_cidr("255.255.255.255/32").has_value());
	for (uint32_t p = 0; p < 128; p++)
		EXPECT_FALSE(parse_cidr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/" + std::to_string(p)).has_value()) << p;
	EXPECT_TRUE(parse_cidr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128").has_value());
}

} // namespace
} // namespace sluice
