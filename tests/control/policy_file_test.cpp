// policyfile/: the example policy the package installs, every key read into
// the model, and hostile files, each refused with its named error at its line
// (and column), promptly: a FIFO is never waited on, a 10^6-line netset is
// refused at its 65,537th prefix, deep nesting where it crosses the bound.
// write_netset round-trips and replaces a file atomically.
#include "policyfile/policy_file.h"
#include "policy_builders.h"

#include "bpf/sluice_abi.h"
#include "temp_dir.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace sluice {
namespace {

using namespace sluice::test;

const PolicyClass *find_class(const Policy &p, const std::string &name)
{
	for (const auto &c : p.classes)
		if (c.name == name)
			return &c;
	return nullptr;
}

TEST(PolicyFile, TheExamplePolicyLoads)
{
	auto r = load_policy(SLUICE_EXAMPLE_POLICY);
	ASSERT_TRUE(r) << r.error().describe();
	const Policy &p = *r;
	ASSERT_EQ(p.classes.size(), 6u);
	EXPECT_FALSE(p.default_from_options);
	EXPECT_EQ(p.classes[0].name, "default");
	EXPECT_EQ(p.classes[0].packets, (Budget{10000, 20000}));

	const PolicyClass *nat = find_class(p, "nat");
	ASSERT_TRUE(nat);
	EXPECT_EQ(nat->packets, (Budget{500000, 1000000}));
	EXPECT_EQ(nat->bytes, (Budget{125000000, 12500000}));
	EXPECT_EQ(nat->standing, (Budget{2000000, 200000}));
	const PolicyClass *dns = find_class(p, "dns");
	ASSERT_TRUE(dns);
	EXPECT_EQ(dns->packets, (Budget{200, 400}));
	EXPECT_LT(dns->packets.rate, p.classes[0].packets.rate / 10);
	EXPECT_EQ(dns->v4_prefix, 24u);
	EXPECT_EQ(dns->v6_prefix, 48u);
	EXPECT_FALSE(dns->standing);
	EXPECT_EQ(find_class(p, "health")->action, ClassAction::exempt);

	ASSERT_EQ(p.rules.size(), 6u);
	EXPECT_EQ(p.rules[0].sources, (std::vector<Cidr>{cidr("198.51.100.0/26"), cidr("2001:db8:100::/48")}));
	EXPECT_EQ(p.rules[2].protocol, Protocol::udp);
	EXPECT_EQ(p.rules[2].ports, (PortSpan{53, 53}));
	EXPECT_EQ(p.rules[3].protocol, Protocol::tcp_syn);
	EXPECT_EQ(p.allow, (std::vector<Cidr>{cidr("203.0.113.0/24")}));
	// The deny netset, relative to the policy file's directory.
	EXPECT_EQ(p.deny, (std::vector<Cidr>{cidr("192.0.2.128/25"), cidr("2001:db8:dead::/48")}));

	auto at = [&](const char *src, Protocol proto, uint16_t port) {
		return explain(p, Frame{*parse_address(src), proto, port});
	};
	EXPECT_EQ(at("192.0.2.1", Protocol::udp, 53).class_name, "dns");
	EXPECT_EQ(at("192.0.2.1", Protocol::tcp_syn, 443).class_name, "syn");
	EXPECT_EQ(at("192.0.2.1", Protocol::tcp, 443).class_name, "default");
	EXPECT_EQ(at("192.0.2.1", Protocol::icmp, 0).class_name, "icmp");
	EXPECT_EQ(at("2001:db8::1", Protocol::icmpv6, 0).class_name, "icmp");
	EXPECT_EQ(at("198.51.100.9", Protocol::udp, 53).class_name, "nat");
	EXPECT_EQ(at("192.0.2.10", Protocol::tcp_syn, 80).action, ClassAction::exempt);
	EXPECT_EQ(at("192.0.2.200", Protocol::udp, 53).decided, Decided::deny_list);
	// The explanation docs/policy.md shows.
	EXPECT_EQ(describe(at("198.51.100.9", Protocol::udp, 53)),
		  "class nat (limit): the most specific matching rule is rule 1 (line 57): sources 198.51.100.0/26, "
		  "2001:db8:100::/48 -> nat\n"
		  "bucket 198.51.100.9/32\n"
		  "lost: rule 3 (line 67): udp port 53 -> dns: on source prefix, its source (no source) is less "
		  "specific than rule 1's (/26)\n");
}

// --- Hostile and bad files: each refused by name, at its line ---

struct Refused {
	PolicyError error;
	uint32_t line;
};

class Files : public ::testing::Test {
protected:
	TempDir dir{"sluice-policy"};

	PolicyResult<Policy> load(const std::string &text)
	{
		return read_policy(dir.file("policy.yaml", text));
	}
	void expect_refused(const std::string &text, PolicyError error, uint32_t line, const std::string &reason = {})
	{
		auto r = load(text);
		ASSERT_FALSE(r) << "accepted:\n" << text;
		EXPECT_EQ(policy_error_name(r.error().error), std::string(policy_error_name(error))) << r.error().str();
		EXPECT_EQ(r.error().line, line) << r.error().str();
		if (!reason.empty())
			EXPECT_EQ(r.error().reason, reason) << r.error().str();
		// The Error form names the file, the line and the error.
		Error e = r.error().as_error();
		EXPECT_NE(e.message.find(std::string(policy_error_name(error))), std::string::npos) << e.message;
		if (line)
			EXPECT_NE(e.message.find(dir.path() + "/policy.yaml:" + std::to_string(line) + ":"), std::string::npos)
				<< e.message;
	}
};

TEST_F(Files, AMinimalPolicyIsTheDaemonsDefault)
{
	auto r = load("version: 1\n");
	ASSERT_TRUE(r) << r.error().str();
	EXPECT_TRUE(r->default_from_options);
	EXPECT_EQ(*r, default_policy());
	// Keys with everything under them commented out are empty.
	r = load("version: 1\nclasses:\nrules:\nallow:\ndeny:\n  # - 192.0.2.0/24\n");
	ASSERT_TRUE(r) << r.error().str();
	EXPECT_EQ(*r, default_policy());
	// JSON is YAML: a JSON policy is a policy file.
	r = load("{\"version\": 1, \"classes\": {\"dns\": {\"rate\": 5, \"burst\": 10}},\n"
		 " \"rules\": [{\"protocol\": \"udp\", \"ports\": 53, \"class\": \"dns\"}], \"deny\": [\"192.0.2.0/24\"]}\n");
	ASSERT_TRUE(r) << r.error().str();
	EXPECT_EQ(r->classes[1].packets, (Budget{5, 10}));
	EXPECT_EQ(r->rules[0].ports, (PortSpan{53, 53}));
	EXPECT_EQ(r->deny, (std::vector<Cidr>{cidr("192.0.2.0/24")}));
}

TEST_F(Files, IPv6AddressesNeedNoQuotes)
{
	auto r = load("version: 1\nallow:\n  - 2001:db8::/32\n  - ::1\n  - \"::2\"\ndeny: [2001:db8:1::1, ::3, ::/127]\n");
	ASSERT_TRUE(r) << r.error().str();
	EXPECT_EQ(r->allow, (std::vector<Cidr>{cidr("2001:db8::/32"), cidr("::1/128"), cidr("::2/128")}));
	EXPECT_EQ(r->deny, (std::vector<Cidr>{cidr("2001:db8:1::1/128"), cidr("::3/128"), cidr("::/127")}));
}

TEST_F(Files, SyntaxAndStructure)
{
	expect_refused("", PolicyError::missing_key, 0);
	expect_refused("version: 1\nclasses: [\n", PolicyError::bad_yaml, 3);
	expect_refused("version: 2\n", PolicyError::bad_version, 1, "version '2' is not one this sluice reads (1)");
	expect_refused("classes: {}\n", PolicyError::missing_key, 1);
	expect_refused("- version: 1\n", PolicyError::wrong_type, 1, "the policy must be a map, not a list");
	expect_refused("version: 1\n---\nversion: 1\n", PolicyError::not_one_document, 2);
	expect_refused("version: 1\nrules: &r []\nallow: *r\n", PolicyError::alias, 3);
	expect_refused("version: 1\ndenny:\n  - 192.0.2.0/24\n", PolicyError::unknown_key, 2,
		       "the policy has no key 'denny' (its keys: version, classes, rules, allow, deny)");
	expect_refused("version: 1\nversion: 1\n", PolicyError::duplicate_key, 2, "'version' is given twice in the policy");
}

TEST_F(Files, Classes)
{
	expect_refused("version: 1\nclasses:\n  dns:\n    rate: 1\n    burst: 2\n  dns:\n    rate: 3\n    burst: 4\n",
		       PolicyError::duplicate_key, 6, "class 'dns' is defined twice");
	expect_refused("version: 1\nclasses:\n  dns:\n    rte: 1\n", PolicyError::unknown_key, 4);
	expect_refused("version: 1\nclasses:\n  DNS:\n    rate: 1\n    burst: 1\n", PolicyError::bad_name, 3,
		       "class name 'DNS' may hold only a-z, 0-9, '_' and '-'");
	expect_refused("version: 1\nclasses:\n  dns:\n    rate: 1\n", PolicyError::missing_key, 4,
		       "class dns gives 'rate' without 'burst': they come together");
	expect_refused("version: 1\nclasses:\n  dns: {}\n", PolicyError::missing_key, 3);
	expect_refused("version: 1\nclasses:\n  dns:\n    rate: 0\n    burst: 1\n", PolicyError::bad_value, 4,
		       "class dns rate 0 is outside 1..100000000");
	expect_refused("version: 1\nclasses:\n  dns:\n    rate: -5\n    burst: 1\n", PolicyError::bad_value, 4);
	expect_refused("version: 1\nclasses:\n  dns:\n    rate: 99999999999999999999999\n    burst: 1\n",
		       PolicyError::bad_value, 4);
	expect_refused("version: 1\nclasses:\n  dns:\n    rate: ten\n    burst: 1\n", PolicyError::wrong_type, 4);
	expect_refused("version: 1\nclasses:\n  dns:\n    rate: [1]\n    burst: 1\n", PolicyError::wrong_type, 4);
	expect_refused("version: 1\nclasses:\n  nat:\n    rate: 1\n    burst: 1\n    byte-rate: 1000\n    byte-burst: 100\n",
		       PolicyError::bad_value, 7, "class nat byte-burst 100 is outside 1514..1000000000");
	expect_refused("version: 1\nclasses:\n  wide:\n    rate: 1\n    burst: 1\n    ipv4-prefix: 33\n",
		       PolicyError::bad_value, 6, "class wide ipv4-prefix 33 is outside 0..32");
	expect_refused("version: 1\nclasses:\n  h:\n    action: exempt\n    rate: 5\n", PolicyError::bad_value, 5);
	expect_refused("version: 1\nclasses:\n  h:\n    action: allow\n", PolicyError::bad_value, 4);
	expect_refused("version: 1\nclasses:\n  default:\n    action: deny\n", PolicyError::bad_value, 4);

	std::string many = "version: 1\nclasses:\n";
	for (size_t i = 1; i <= kMaxClasses; i++)
		many += "  c" + std::to_string(i) + ": {rate: 1, burst: 1}\n";
	// 63 named classes and the default: 64. The 64th named is one too many.
	expect_refused(many, PolicyError::too_many_classes, 2 + uint32_t(kMaxClasses));
}

TEST_F(Files, Rules)
{
	const std::string head = "version: 1\nclasses:\n  x: {rate: 1, burst: 1}\nrules:\n";
	expect_refused(head + "  - protocol: udp\n    ports: 65536\n    class: x\n", PolicyError::bad_port, 6,
		       "rule 1 ports 65536 is outside 0..65535");
	expect_refused(head + "  - protocol: udp\n    ports: -1\n    class: x\n", PolicyError::bad_port, 6);
	expect_refused(head + "  - protocol: udp\n    ports: 100-10\n    class: x\n", PolicyError::bad_port, 6);
	expect_refused(head + "  - protocol: udp\n    ports: 1-2-3\n    class: x\n", PolicyError::wrong_type, 6);
	expect_refused(head + "  - protocol: icmp\n    ports: 1\n    class: x\n", PolicyError::bad_rule, 6);
	expect_refused(head + "  - ports: 53\n    class: x\n", PolicyError::bad_rule, 5);
	expect_refused(head + "  - protocol: sctp\n    class: x\n", PolicyError::bad_protocol, 5);
	expect_refused(head + "  - protocol: udp\n    class: y\n", PolicyError::unknown_class, 6);
	expect_refused(head + "  - protocol: udp\n", PolicyError::missing_key, 5);
	expect_refused(head + "  - class: x\n", PolicyError::bad_rule, 5);
	expect_refused(head + "  - sources: [10.0.0.1/8]\n    class: x\n", PolicyError::bad_prefix, 5);

	auto ok = load(head + "  - protocol: tcp\n    ports: 1024-2047\n    class: x\n");
	ASSERT_TRUE(ok) << ok.error().str();
	EXPECT_EQ(ok->rules[0].ports, (PortSpan{1024, 2047}));
	EXPECT_EQ(ok->rules[0].line, 5u);

	std::string many = head;
	for (size_t i = 0; i <= kMaxRules; i++)
		many += "  - {protocol: udp, ports: " + std::to_string(i) + ", class: x}\n";
	expect_refused(many, PolicyError::too_many_rules, 5 + uint32_t(kMaxRules));
}

TEST_F(Files, DuplicateAndOverlappingPrefixes)
{
	expect_refused("version: 1\ndeny:\n  - 192.0.2.0/24\n  - 198.51.100.0/24\n  - 192.0.2.0/24\n",
		       PolicyError::duplicate_prefix, 5);
	auto r = load("version: 1\ndeny:\n  - 192.0.2.0/24\n  - 192.0.0.0/16\n");
	ASSERT_FALSE(r);
	EXPECT_EQ(r.error().error, PolicyError::overlapping_prefix);
	EXPECT_EQ(r.error().line, 3u);
	EXPECT_EQ(r.error().reason, "the deny list holds 192.0.2.0/24, which lies inside 192.0.0.0/16 (at " + dir.path() +
					    "/policy.yaml:4): one of them is a mistake");
	// Between a netset and the inline entries: the netset's line.
	dir.file("d.netset", "# blocklist\n\n10.0.0.0/8\n");
	r = load("version: 1\ndeny:\n  - 10.1.0.0/16\n  - file: d.netset\n");
	ASSERT_FALSE(r);
	EXPECT_EQ(r.error().error, PolicyError::overlapping_prefix);
	EXPECT_EQ(r.error().file, dir.path() + "/policy.yaml");
	EXPECT_EQ(r.error().line, 3u);
	// The same prefix in the allow and the deny list is no overlap (the deny list wins).
	r = load("version: 1\nallow: [192.0.2.0/24]\ndeny: [192.0.2.0/24]\n");
	EXPECT_TRUE(r) << r.error().str();
	// One rule's sources, too.
	expect_refused("version: 1\nclasses:\n  x: {rate: 1, burst: 1}\nrules:\n  - sources: [10.0.0.0/8, 10.0.0.0/8]\n"
		       "    class: x\n",
		       PolicyError::duplicate_prefix, 5);
}

TEST_F(Files, UpstreamOnTheDenyListMarksItsEntries)
{
	// `upstream: true` on a netset or on one prefix of the deny list: those
	// entries are announced upstream (docs/upstream.md); the rest is dropped
	// here only. Every entry stays on the deny list.
	dir.file("up.netset", "# announced\n198.18.3.0/24\n2001:2:0:3::/64\n");
	dir.file("local.netset", "203.0.113.0/24\n");
	auto r = load("version: 1\ndeny:\n  - 192.0.2.0/24\n  - file: up.netset\n    upstream: true\n"
		      "  - {file: local.netset, upstream: false}\n  - {prefix: 198.51.100.7, upstream: true}\n"
		      "  - prefix: 198.51.100.9/32\n");
	ASSERT_TRUE(r) << r.error().str();
	EXPECT_EQ(r->deny, (std::vector<Cidr>{cidr("192.0.2.0/24"), cidr("198.18.3.0/24"), cidr("2001:2:0:3::/64"),
					      cidr("203.0.113.0/24"), cidr("198.51.100.7/32"), cidr("198.51.100.9/32")}));
	EXPECT_EQ(r->deny_upstream,
		  (std::vector<Cidr>{cidr("198.18.3.0/24"), cidr("2001:2:0:3::/64"), cidr("198.51.100.7/32")}));
	// Without the key nothing is marked.
	r = load("version: 1\ndeny:\n  - file: up.netset\n");
	ASSERT_TRUE(r) << r.error().str();
	EXPECT_TRUE(r->deny_upstream.empty());

	// Only the deny list; a yes/no value; one of file and prefix; the
	// prefix checked like any other.
	expect_refused("version: 1\nallow:\n  - {prefix: 192.0.2.0/24, upstream: true}\n", PolicyError::bad_value, 3);
	expect_refused("version: 1\nclasses:\n  x: {rate: 1, burst: 1}\nrules:\n"
		       "  - sources: [{file: up.netset, upstream: true}]\n    class: x\n",
		       PolicyError::bad_value, 5);
	expect_refused("version: 1\ndeny:\n  - {prefix: 192.0.2.0/24, upstream: yes}\n", PolicyError::wrong_type, 3);
	expect_refused("version: 1\ndeny:\n  - {prefix: 192.0.2.0/24, upstream: [true]}\n", PolicyError::wrong_type, 3);
	expect_refused("version: 1\ndeny:\n  - {prefix: 192.0.2.0/24, file: up.netset}\n", PolicyError::bad_value, 3);
	expect_refused("version: 1\ndeny:\n  - {upstream: true}\n", PolicyError::missing_key, 3);
	expect_refused("version: 1\ndeny:\n  - {prefix: 192.0.2.1/24, upstream: true}\n", PolicyError::bad_prefix, 3);
	expect_refused("version: 1\ndeny:\n  - {prefixes: [192.0.2.0/24]}\n", PolicyError::unknown_key, 3);
	// The overlap check sees the marked entries like the others.
	expect_refused("version: 1\ndeny:\n  - 198.18.0.0/16\n  - {prefix: 198.18.3.0/24, upstream: true}\n",
		       PolicyError::overlapping_prefix, 4);
}

TEST_F(Files, BadUtf8)
{
	expect_refused("version: 1\n# caf\xc3\xa9 is fine\nallow:\n  - 192.0.2.0/24 # na\xefve\n", PolicyError::bad_utf8, 4);
	expect_refused("version: 1\n\xc0\xafx: 1\n", PolicyError::bad_utf8, 2); // overlong '/'
	expect_refused(std::string("version: 1\n\0: 1\n", 15), PolicyError::bad_utf8, 2);
	auto r = load("version: 1\n# caf\xc3\xa9 and \xe2\x82\xac are UTF-8\n");
	EXPECT_TRUE(r) << r.error().str();
}

TEST_F(Files, DeepNestingIsRefusedWhereItCrossesTheBound)
{
	auto start = std::chrono::steady_clock::now();
	expect_refused("version: 1\nrules: " + std::string(100000, '[') + "\n", PolicyError::too_deep, 2);
	// Block nesting: every level one line; refused at the first too deep.
	std::string nested = "version: 1\nx:\n";
	for (int i = 1; i < 20; i++)
		nested += std::string(2 * i, ' ') + "k" + std::to_string(i) + ":\n";
	expect_refused(nested, PolicyError::too_deep, 2 + kPolicyDepthMax - 1);
	EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_F(Files, TooManyNodesInOneDocument)
{
	std::string text = "version: 1\ndeny: [";
	for (uint64_t i = 0; i < kPolicyNodesMax; i++)
		text += "1,";
	text += "1]\n";
	expect_refused(text, PolicyError::too_many_nodes, 2);
}

TEST_F(Files, AMillionInlineEntriesAreRefusedQuickly)
{
	std::string text = "version: 1\ndeny:\n";
	char line[32];
	for (uint32_t i = 0; i < 1000000; i++) {
		std::snprintf(line, sizeof(line), "- ::%x:%x\n", i >> 16, i & 0xffff);
		text += line;
	}
	ASSERT_LT(text.size(), kPolicyFileBytesMax); // so it is the node bound that refuses it
	auto start = std::chrono::steady_clock::now();
	// Nodes: the map, "version", "1", "deny", the list: the list's
	// 262,140th entry is the 262,145th node, on line 2 + 262,140.
	expect_refused(text, PolicyError::too_many_nodes, 2 + uint32_t(kPolicyNodesMax) - 4);
	EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)); // sanitized builds too
}

// --- Netset files ---

TEST_F(Files, ANetsetThatIsADirectoryOrAFifo)
{
	std::filesystem::create_directory(dir.path() + "/lists");
	expect_refused("version: 1\ndeny:\n  - file: lists\n", PolicyError::is_directory, 3);
	ASSERT_EQ(mkfifo((dir.path() + "/fifo").c_str(), 0600), 0);
	auto start = std::chrono::steady_clock::now();
	expect_refused("version: 1\ndeny:\n  - file: fifo\n", PolicyError::is_fifo, 3);
	EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
	// The policy file itself, too.
	auto r = read_policy(dir.path() + "/fifo");
	ASSERT_FALSE(r);
	EXPECT_EQ(r.error().error, PolicyError::is_fifo);
	r = read_policy(dir.path());
	ASSERT_FALSE(r);
	EXPECT_EQ(r.error().error, PolicyError::is_directory);
	r = read_policy("/dev/null");
	ASSERT_FALSE(r);
	EXPECT_EQ(r.error().error, PolicyError::not_regular);
}

TEST_F(Files, ANetsetThatIsMissingALoopOrUnreadable)
{
	auto r = load("version: 1\ndeny:\n  - file: nowhere.netset\n");
	ASSERT_FALSE(r);
	EXPECT_EQ(r.error().error, PolicyError::not_found);
	EXPECT_EQ(r.error().line, 3u);
	EXPECT_EQ(r.error().code, ENOENT);
	EXPECT_EQ(r.error().as_error().kind, ErrorKind::system);
	EXPECT_EQ(r.error().reason, "netset " + dir.path() + "/nowhere.netset: cannot open it");

	ASSERT_EQ(symlink("b", (dir.path() + "/a").c_str()), 0);
	ASSERT_EQ(symlink("a", (dir.path() + "/b").c_str()), 0);
	expect_refused("version: 1\ndeny:\n  - file: a\n", PolicyError::symlink_loop, 3);

	// Unreadable: mode 0 (its owner cannot read it either); and root reads
	// any file, so as root a child without privileges tries.
	std::string secret = dir.file("secret.netset", "192.0.2.0/24\n");
	std::string policy = dir.file("p.yaml", "version: 1\ndeny:\n  - file: secret.netset\n");
	ASSERT_EQ(chmod(secret.c_str(), 0), 0);
	ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
	ASSERT_EQ(chmod(policy.c_str(), 0644), 0);
	pid_t child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		if (getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
			_exit(3);
		auto p = read_policy(policy);
		_exit(!p && p.error().error == PolicyError::unreadable && p.error().code == EACCES && p.error().line == 3 ? 0 : 1);
	}
	int status = 0;
	ASSERT_EQ(waitpid(child, &status, 0), child);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(WEXITSTATUS(status), 0) << "the unprivileged child did not see unreadable at line 3";
}

TEST_F(Files, ANetsetsOwnBadLineIsNamedInIt)
{
	dir.file("bad.netset", "# ok\n192.0.2.0/24\n\n   10.0.0.1/8\n");
	auto r = load("version: 1\ndeny:\n  - file: bad.netset\n");
	ASSERT_FALSE(r);
	EXPECT_EQ(r.error().error, PolicyError::bad_prefix);
	EXPECT_EQ(r.error().file, dir.path() + "/bad.netset");
	EXPECT_EQ(r.error().line, 4u);
	EXPECT_EQ(r.error().column, 4u);
	EXPECT_EQ(r.error().str(), dir.path() + "/bad.netset:4:4: bad_prefix: CIDR 10.0.0.1/8 has host bits set; did you "
					      "mean 10.0.0.0/8?");
}

TEST_F(Files, AMillionLineNetsetIsRefusedQuickly)
{
	{
		std::ofstream f(dir.path() + "/huge.netset");
		for (uint32_t i = 0; i < 1000000; i++)
			f << (10 + (i >> 16)) << '.' << ((i >> 8) & 255) << '.' << (i & 255) << ".0/24\n";
	}
	auto start = std::chrono::steady_clock::now();
	auto r = load("version: 1\ndeny:\n  - file: huge.netset\n");
	auto took = std::chrono::steady_clock::now() - start;
	ASSERT_FALSE(r);
	EXPECT_EQ(r.error().error, PolicyError::too_many_entries) << r.error().str();
	EXPECT_EQ(r.error().line, SLUICE_LIST_MAX_ENTRIES + 1);
	EXPECT_EQ(r.error().file, dir.path() + "/huge.netset");
	EXPECT_LT(took, std::chrono::seconds(2));

	// The room is the list's: inline entries count against the netset's.
	std::string two;
	for (uint32_t i = 0; i < SLUICE_LIST_MAX_ENTRIES; i++)
		two += "2001:db8:" + std::to_string(i % 10000) + ":" + std::to_string(i / 10000) + "::/64\n";
	dir.file("v6.netset", two);
	r = load("version: 1\ndeny:\n  - 2001:db9::/32\n  - file: v6.netset\n");
	ASSERT_FALSE(r);
	EXPECT_EQ(r.error().error, PolicyError::too_many_entries);
	EXPECT_EQ(r.error().line, SLUICE_LIST_MAX_ENTRIES);
	// Without the inline one it fits exactly; a full list is read (and
	// checked for overlaps) well within the second a reload may take.
	start = std::chrono::steady_clock::now();
	r = load("version: 1\ndeny:\n  - file: v6.netset\n");
	took = std::chrono::steady_clock::now() - start;
	ASSERT_TRUE(r) << r.error().str();
	EXPECT_EQ(r->deny.size(), SLUICE_LIST_MAX_ENTRIES);
	EXPECT_LT(took, std::chrono::seconds(1));
	std::printf("a netset of %u IPv6 prefixes read in %.1f ms\n", SLUICE_LIST_MAX_ENTRIES,
		    std::chrono::duration<double, std::milli>(took).count());
}

TEST_F(Files, AFileTooLargeIsRefusedBeforeItIsRead)
{
	std::string big = dir.path() + "/big.netset";
	{
		std::ofstream f(big);
	}
	ASSERT_EQ(truncate(big.c_str(), off_t(kPolicyFileBytesMax) + 1), 0);
	expect_refused("version: 1\ndeny:\n  - file: big.netset\n", PolicyError::too_large, 3);
	ASSERT_EQ(truncate((dir.path() + "/policy.yaml").c_str(), off_t(kPolicyFileBytesMax) + 1), 0);
	auto r = read_policy(dir.path() + "/policy.yaml");
	ASSERT_FALSE(r);
	EXPECT_EQ(r.error().error, PolicyError::too_large);
}

TEST_F(Files, AbsoluteNetsetPathsAndSymlinksToFiles)
{
	std::string list = dir.file("real.netset", "198.51.100.0/24\n");
	ASSERT_EQ(symlink(list.c_str(), (dir.path() + "/link.netset").c_str()), 0);
	auto r = load("version: 1\nallow:\n  - file: " + list + "\ndeny:\n  - file: link.netset\n");
	ASSERT_TRUE(r) << r.error().str();
	// Two lists: the same prefix in each is no overlap.
	EXPECT_EQ(r->allow, (std::vector<Cidr>{cidr("198.51.100.0/24")}));
	EXPECT_EQ(r->deny, r->allow);
}

// --- write_netset ---

TEST_F(Files, WriteNetsetRoundTripsAndReplacesAtomically)
{
	std::string path = dir.path() + "/running.netset";
	std::vector<Cidr> lists{cidr("192.0.2.0/24"), cidr("2001:db8::/32"), cidr("198.51.100.7/32")};
	ASSERT_TRUE(write_netset(path, lists, "the running deny list\nwritten by a test"));
	auto back = read_netset(path, SLUICE_LIST_MAX_ENTRIES, SLUICE_LIST_MAX_ENTRIES);
	ASSERT_TRUE(back) << back.error().str();
	ASSERT_EQ(back->size(), 3u);
	for (size_t i = 0; i < lists.size(); i++)
		EXPECT_EQ((*back)[i].cidr, lists[i]);
	EXPECT_EQ((*back)[0].line, 3u); // after the two header lines
	struct stat st {};
	ASSERT_EQ(stat(path.c_str(), &st), 0);
	EXPECT_EQ(st.st_mode & 0777, 0644u);

	// Replaced by rename: a reader holding the old file still reads it whole.
	std::ifstream old(path);
	ino_t before = st.st_ino;
	ASSERT_TRUE(write_netset(path, {cidr("10.0.0.0/8")}));
	ASSERT_EQ(stat(path.c_str(), &st), 0);
	EXPECT_NE(st.st_ino, before);
	std::string first;
	std::getline(old, first);
	EXPECT_EQ(first, "# the running deny list");
	back = read_netset(path, 10, 10);
	ASSERT_TRUE(back);
	ASSERT_EQ(back->size(), 1u);
	// No temporary file is left beside it.
	size_t files = 0;
	for (const auto &e : std::filesystem::directory_iterator(dir.path()))
		files += e.path().filename().string().starts_with("running.netset");
	EXPECT_EQ(files, 1u);

	// A directory that does not exist: refused, with errno.
	auto bad = write_netset(dir.path() + "/no/such/dir.netset", lists);
	ASSERT_FALSE(bad);
	EXPECT_EQ(bad.error().code, ENOENT);
}

} // namespace
} // namespace sluice
