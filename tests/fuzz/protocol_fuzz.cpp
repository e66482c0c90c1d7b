// protocol_fuzz.cpp - libFuzzer harness for the control protocol's parser:
// one request line (ctl/lib/ipc/protocol.h parse_request), then every typed getter
// on every argument name the daemon reads, then what the daemon does with the
// strings it gets (addresses, CIDRs, breaker states, attach modes), then the
// reply as the control server writes it. Built with ASan and UBSan.
//
// Checks, beyond "no crash, no sanitizer report, no exception":
//   - a refused line is an input error (kind invalid: exit code 2) with a
//     message; an accepted one is a JSON object with a known "cmd" string;
//   - each getter agrees with the JSON: str() only for strings, integer()
//     only for integers in int64 range and the same value, str_list() only
//     for arrays of strings, the opt_ forms empty exactly when the name is
//     absent;
//   - a parsed CIDR has no host bits and prints back to itself; a parsed
//     address prints back to an address that parses to the same bytes;
//   - every reply, ok or error, serializes to one line of valid JSON.
//
//   --write-corpus=DIR   write the seed corpus (one request per command,
//                        good and bad) and exit
#include "base/address.h"
#include "fuzz_support.h"
#include "logic/breaker.h"
#include "bpf/dataplane.h"
#include "ipc/protocol.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace sluice;

[[noreturn]] void die(const std::string &why, std::string_view input)
{
	std::fprintf(stderr, "protocol_fuzz: %s\ninput (%zu bytes): %.*s\n", why.c_str(), input.size(),
		     int(std::min<std::size_t>(input.size(), 400)), input.data());
	std::abort();
}

const char *const kNames[] = {"cmd", "iface", "to", "rate", "burst", "addr", "set", "n", "list", "cidrs",
			      "mode", "from_fd", ""};

std::string wire(const json &reply)
{
	// As ControlServer writes replies: invalid UTF-8 replaced, never thrown.
	return reply.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

void check_reply(const json &reply, std::string_view input)
{
	std::string line = wire(reply);
	if (line.find('\n') != line.size() - 1)
		die("a reply spans more than one line", input);
	json back = json::parse(line, nullptr, false);
	if (back.is_discarded() || !back.is_object() || !back.contains("ok"))
		die("a reply does not parse back as an object with \"ok\": " + line, input);
}

void check_cidr_text(const std::string &text, std::string_view input)
{
	auto c = parse_cidr(text);
	if (!c) {
		if (c.error().kind != ErrorKind::invalid || c.error().message.empty())
			die("parse_cidr error is not an input error with a message", input);
		return;
	}
	uint32_t max = c->addr.family == Family::v4 ? 32 : 128;
	if (c->prefix > max)
		die("parse_cidr accepted prefix " + std::to_string(c->prefix), input);
	for (uint32_t bit = c->prefix; bit < max; bit++)
		if (c->addr.bytes[bit / 8] & (0x80u >> (bit % 8)))
			die("parse_cidr accepted host bits: " + text, input);
	auto again = parse_cidr(c->str());
	if (!again || !(*again == *c))
		die("CIDR " + text + " prints as " + c->str() + ", which does not parse back to it", input);
}

void check_address_text(const std::string &text, std::string_view input)
{
	auto a = parse_address(text);
	if (!a)
		return;
	auto again = parse_address(a->str());
	if (!again || !(*again == *a))
		die("address " + text + " prints as " + a->str() + ", which does not parse back to it", input);
}

void exercise(const Request &r, std::string_view input)
{
	if (!known_command(r.cmd))
		die("accepted unknown command '" + r.cmd + "'", input);
	if (!r.args.is_object())
		die("accepted a request that is not an object", input);
	for (const char *name : kNames) {
		bool present = r.args.contains(name);
		const json *v = present ? &r.args.at(name) : nullptr;

		auto s = r.str(name);
		if (s.has_value() != (present && v->is_string()))
			die(std::string("str(\"") + name + "\") disagrees with the JSON", input);
		if (s && *s != v->get<std::string>())
			die("str() changed the value", input);
		if (!s && (s.error().kind != ErrorKind::invalid || s.error().message.empty()))
			die("str() error is not an input error with a message", input);

		auto os = r.opt_str(name);
		if (os.has_value() != (!present || v->is_string()))
			die(std::string("opt_str(\"") + name + "\") disagrees with the JSON", input);
		if (os && os->has_value() != present)
			die("opt_str() empty although present, or the reverse", input);

		auto i = r.integer(name);
		bool int_ok = present && v->is_number_integer() &&
			      !(v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX));
		if (i.has_value() != int_ok)
			die(std::string("integer(\"") + name + "\") disagrees with the JSON: " + v->dump(), input);
		if (i && *i != v->get<int64_t>())
			die("integer() changed the value", input);

		auto oi = r.opt_integer(name);
		if (oi.has_value() != (!present || int_ok))
			die(std::string("opt_integer(\"") + name + "\") disagrees with the JSON", input);

		auto l = r.str_list(name);
		bool list_ok = present && v->is_array();
		if (list_ok)
			for (const auto &e : *v)
				list_ok = list_ok && e.is_string();
		if (l.has_value() != list_ok)
			die(std::string("str_list(\"") + name + "\") disagrees with the JSON", input);
		if (l && l->size() != v->size())
			die("str_list() lost elements", input);
	}

	// What the daemon does with the strings it gets.
	if (auto a = r.str("addr"))
		check_address_text(*a, input);
	if (auto l = r.str_list("cidrs"))
		for (const auto &c : *l)
			check_cidr_text(c, input);
	if (auto t = r.str("to"))
		(void)breaker_state_from(*t);
	if (auto m = r.str("mode")) {
		auto mode = parse_attach_mode(*m);
		if (mode)
			check_reply(ok_reply({{"mode", std::string(to_string(*mode))}}), input);
		else
			check_reply(error_reply(mode.error()), input);
	}
	// An echo of the whole request, as status and list replies carry
	// strings from requests.
	check_reply(ok_reply({{"cmd", r.cmd}, {"args", r.args}}), input);
}

void write_corpus(const std::string &dir)
{
	std::filesystem::create_directories(dir);
	const std::vector<std::pair<const char *, const char *>> seeds = {
		{"status", R"({"cmd": "status"})"},
		{"status-iface", R"({"cmd": "status", "iface": "veth-host"})"},
		{"stats", R"({"cmd": "stats", "iface": "eth0"})"},
		{"breaker", R"({"cmd": "breaker", "iface": "eth0", "to": "shedding"})"},
		{"set", R"({"cmd": "set", "iface": "eth0", "rate": 1000, "burst": 2000})"},
		{"set-negative", R"({"cmd": "set", "iface": "eth0", "rate": -1})"},
		{"set-huge", R"({"cmd": "set", "iface": "eth0", "rate": 18446744073709551615})"},
		{"set-float", R"({"cmd": "set", "iface": "eth0", "burst": 1.5e300})"},
		{"bucket", R"({"cmd": "bucket", "iface": "eth0", "addr": "198.18.0.7", "set": 5})"},
		{"bucket-v6", R"({"cmd": "bucket", "iface": "eth0", "addr": "2001:2::7"})"},
		{"refill", R"({"cmd": "refill", "iface": "eth0", "addr": "198.18.0.7", "n": 3})"},
		{"list-add", R"({"cmd": "list_add", "iface": "eth0", "list": "deny", "cidrs": ["198.18.0.0/15", "2001:2::/48"]})"},
		{"list-add-hostbits", R"({"cmd": "list_add", "iface": "eth0", "list": "allow", "cidrs": ["10.0.0.1/8"]})"},
		{"list-del", R"({"cmd": "list_del", "iface": "eth0", "list": "allow", "cidrs": ["10.0.0.0/8"]})"},
		{"list-show", R"({"cmd": "list_show", "iface": "eth0", "list": "deny"})"},
		{"list-from-fd", R"({"cmd": "list_add", "iface": "eth0", "list": "deny", "from_fd": true})"},
		{"attach", R"({"cmd": "attach", "iface": "eth1", "mode": "skb"})"},
		{"detach", R"({"cmd": "detach", "iface": "eth0"})"},
		{"audit", R"({"cmd": "audit", "iface": "eth0"})"},
		{"unknown", R"({"cmd": "reboot"})"},
		{"not-object", R"(["status"])"},
		{"cmd-number", R"({"cmd": 7})"},
		{"utf8-garbage", "{\"cmd\": \"status\", \"iface\": \"\xff\xfe\xc3\x28\"}"},
		{"escapes", R"({"cmd": "status", "iface": "\u0000\ud800"})"},
		{"deep", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"},
		{"empty", ""},
	};
	for (const auto &[name, text] : seeds) {
		std::ofstream f(std::filesystem::path(dir) / name, std::ios::binary);
		f << text;
	}
	std::printf("wrote %zu seeds to %s\n", seeds.size(), dir.c_str());
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	sluice::fuzz::write_corpus_if_asked(*argc, *argv, write_corpus);
	return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	std::string_view line(reinterpret_cast<const char *>(data), size);
	auto r = parse_request(line);
	if (!r) {
		if (r.error().kind != ErrorKind::invalid || r.error().message.empty())
			die("a refused request is not an input error with a message", line);
		check_reply(error_reply(r.error()), line);
		return 0;
	}
	exercise(*r, line);
	return 0;
}
