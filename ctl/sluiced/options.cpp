#include "sluiced/options.h"

#include "bpf/maps.h"

#include <boost/program_options.hpp>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <net/if.h>
#include <sstream>

namespace po = boost::program_options;

namespace sluice {

namespace {

Result<std::array<uint64_t, 2>> parse_key(const std::string &hex)
{
	if (hex.size() != 32)
		return invalid("--hash-key must be 32 hex digits (128 bits), got " + std::to_string(hex.size()) + " characters");
	std::array<uint64_t, 2> key{};
	for (int i = 0; i < 2; i++) {
		auto part = hex.substr(static_cast<size_t>(i) * 16, 16);
		auto [end, ec] = std::from_chars(part.data(), part.data() + 16, key[static_cast<size_t>(i)], 16);
		if (ec != std::errc() || end != part.data() + 16)
			return invalid("--hash-key must be 32 hex digits");
	}
	return key;
}

Result<LogLevel> parse_level(const std::string &s)
{
	if (s == "debug")
		return LogLevel::debug;
	if (s == "info")
		return LogLevel::info;
	if (s == "warn")
		return LogLevel::warn;
	if (s == "error")
		return LogLevel::error;
	return invalid("--log-level '" + s + "' is not one of debug, info, warn, error");
}

Status validate_interface(const std::string &name)
{
	if (name.empty())
		return invalid("--interface needs a name");
	if (name.size() >= IFNAMSIZ)
		return invalid("interface name '" + name + "' is longer than " + std::to_string(IFNAMSIZ - 1) +
			       " characters");
	for (unsigned char c : name)
		if (c <= ' ' || c == '/' || c == ':' || c >= 0x7f)
			return invalid("interface name '" + name + "' has a character interface names cannot have");
	return {};
}

// The config file's text: a regular file of at most 1 MiB (a FIFO would
// block, /dev/zero would fill memory).
Result<std::string> read_config_file(const std::string &path)
{
	constexpr std::uintmax_t max_bytes = 1 << 20;
	std::error_code ec;
	auto st = std::filesystem::status(path, ec);
	if (ec || !std::filesystem::exists(st))
		return invalid("cannot read config file " + path);
	if (!std::filesystem::is_regular_file(st))
		return invalid("config file " + path + " is not a regular file");
	std::ifstream f(path, std::ios::binary);
	if (!f)
		return invalid("cannot read config file " + path);
	std::string text;
	char buf[4096];
	while (f.read(buf, sizeof(buf)) || f.gcount() > 0) {
		text.append(buf, static_cast<size_t>(f.gcount()));
		if (text.size() > max_bytes)
			return invalid("config file " + path + " is over 1 MiB");
	}
	return text;
}

} // namespace

Result<ParsedOptions> parse_daemon_options(int argc, const char *const *argv)
{
	ParsedOptions out;
	DaemonOptions &o = out.options;
	std::string mode = "native", level = "info", key_hex, metrics_listen;
	int64_t rate = static_cast<int64_t>(o.rate_pps), burst = static_cast<int64_t>(o.burst);
	int64_t slots = o.load.slots, v4 = o.load.v4_prefix, v6 = o.load.v6_prefix;
	int64_t trip = static_cast<int64_t>(o.policy.trip_pps), clear = -1, periods = o.policy.trip_periods;
	int64_t audit = o.audit_per_period, clients = o.max_clients;
	int64_t sample_every = o.load.sample_every, top_capacity = static_cast<int64_t>(o.top_capacity);
	double start_pct = o.policy.start_ppm / 10000.0;

	po::options_description desc("sluiced options");
	desc.add_options()
		("help,h", "show this help")
		("config", po::value(&o.config_file), "INI config file (keys as the long options; the command line wins)")
		("interface,i", po::value(&o.interfaces)->composing(), "interface to protect (repeatable)")
		("mode", po::value(&mode)->default_value(mode), "attach mode: native (fails naming --mode skb when the driver lacks it), skb, auto (falls back to skb, loudly)")
		("rate", po::value(&rate)->default_value(rate), "tokens per second per source")
		("burst", po::value(&burst)->default_value(burst), "bucket capacity per source")
		("table-size", po::value(&slots)->default_value(slots), "slots in the bucket table (power of two)")
		("ipv4-prefix", po::value(&v4)->default_value(v4), "IPv4 source prefix length (0..32)")
		("ipv6-prefix", po::value(&v6)->default_value(v6), "IPv6 source prefix length (0..128)")
		("dry-run", po::bool_switch(&o.load.dry_run), "compute verdicts, count would-drops, pass everything")
		("multiprog", po::bool_switch(&o.load.multiprog), "attach through libxdp's dispatcher, beside other XDP programs (xdp-loader status lists it)")
		("sample-every", po::value(&sample_every)->default_value(sample_every), "sample 1 in N dropped frames for `sluicectl top` (a power of two; 0: off)")
		("top-capacity", po::value(&top_capacity)->default_value(top_capacity), "sources the `sluicectl top` summary tracks (its memory is fixed by this)")
		("top-window", po::value(&o.top_window_s)->default_value(o.top_window_s), "seconds each `sluicectl top` summary covers")
		("hash-key", po::value(&key_hex), "SipHash key as 32 hex digits (tests only; default from getrandom)")
		("socket", po::value(&o.socket_path)->default_value(o.socket_path), "control socket path")
		("socket-group", po::value(&o.socket_group), "group allowed on the control socket (mode 0660)")
		("pin-dir", po::value(&o.pin_dir)->default_value(o.pin_dir), "bpffs directory for pins (one subdirectory per interface)")
		("period", po::value(&o.period_s)->default_value(o.period_s), "control period in seconds")
		("trip-pps", po::value(&trip)->default_value(trip), "admitted pps that trips the breaker")
		("clear-pps", po::value(&clear), "incoming pps under which shedding may end (default: --trip-pps)")
		("trip-periods", po::value(&periods)->default_value(periods), "consecutive periods a breaker condition must hold")
		("hold", po::value(&o.policy.hold_s)->default_value(o.policy.hold_s), "least seconds in shedding")
		("recovery", po::value(&o.policy.recovery_s)->default_value(o.policy.recovery_s), "seconds the recovery ramp takes")
		("recovery-start", po::value(&start_pct)->default_value(start_pct), "admission percent the ramp starts at")
		("audit-slots", po::value(&audit)->default_value(audit), "slots audited per period")
		("max-clients", po::value(&clients)->default_value(clients), "concurrent control clients")
		("log-level", po::value(&level)->default_value(level), "debug, info, warn, error")
		("metrics-listen", po::value(&metrics_listen), "serve Prometheus /metrics and /healthz on ADDRESS:PORT (e.g. 127.0.0.1:9464; default: off)")
		("detach-on-exit", po::bool_switch(&o.detach_on_exit), "detach the program when sluiced exits (default: enforcement stays)");

	std::ostringstream usage;
	usage << "usage: sluiced -i IFACE [-i IFACE...] [options]\n" << desc;
	out.usage = usage.str();

	for (int i = 1; i < argc && argv[i]; i++)
		if (auto ok = refuse_option_placeholders(argv[i], "argument '" + std::string(argv[i]) + "'"); !ok)
			return std::unexpected(ok.error());
	po::variables_map vm;
	try {
		po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
		if (vm.count("config")) {
			std::string path = vm["config"].as<std::string>();
			auto text = read_config_file(path);
			if (!text)
				return std::unexpected(text.error());
			if (auto ok = refuse_option_placeholders(*text, "config file " + path); !ok)
				return std::unexpected(ok.error());
			std::istringstream f(*text);
			po::store(po::parse_config_file(f, desc), vm); // earlier store wins: the command line
		}
		po::notify(vm);
	} catch (const po::error &e) {
		return invalid(e.what());
	}
	if (vm.count("help")) {
		out.help = true;
		return out;
	}

	if (o.interfaces.empty())
		return invalid("no interface given: use -i IFACE");
	for (const auto &i : o.interfaces)
		if (auto ok = validate_interface(i); !ok)
			return std::unexpected(ok.error());
	auto m = parse_attach_mode(mode);
	if (!m)
		return invalid("--mode: " + m.error().message);
	o.mode = *m;
	if (rate < 1 || static_cast<uint64_t>(rate) > SLUICE_RATE_MAX)
		return invalid("--rate " + std::to_string(rate) + " is outside 1.." + std::to_string(SLUICE_RATE_MAX));
	if (burst < 1 || static_cast<uint64_t>(burst) > SLUICE_BURST_MAX)
		return invalid("--burst " + std::to_string(burst) + " is outside 1.." + std::to_string(SLUICE_BURST_MAX));
	o.rate_pps = static_cast<uint64_t>(rate);
	o.burst = static_cast<uint64_t>(burst);
	o.rate_given = !vm["rate"].defaulted();
	o.burst_given = !vm["burst"].defaulted();
	if (slots < 0 || slots > SLUICE_SLOTS_MAX)
		return invalid("--table-size " + std::to_string(slots) + " must be a power of two between " +
			       std::to_string(SLUICE_SLOTS_MIN) + " and " + std::to_string(SLUICE_SLOTS_MAX));
	if (v4 < 0 || v4 > 32)
		return invalid("--ipv4-prefix " + std::to_string(v4) + " is outside 0..32");
	if (v6 < 0 || v6 > 128)
		return invalid("--ipv6-prefix " + std::to_string(v6) + " is outside 0..128");
	o.load.slots = static_cast<uint32_t>(slots);
	o.load.v4_prefix = static_cast<uint32_t>(v4);
	o.load.v6_prefix = static_cast<uint32_t>(v6);
	if (auto ok = validate_load_options(o.load); !ok)
		return invalid("--table-size: " + ok.error().message);
	if (vm.count("hash-key")) { // given but empty is a bad key, not "random"
		auto k = parse_key(key_hex);
		if (!k)
			return std::unexpected(k.error());
		o.load.hash_key = *k;
	}
	if (o.socket_path.empty() || o.socket_path.size() >= 108)
		return invalid("--socket path must be 1..107 characters");
	if (o.pin_dir.empty() || o.pin_dir[0] != '/')
		return invalid("--pin-dir must be an absolute path");
	if (!(o.period_s >= 0.01 && o.period_s <= 60))
		return invalid("--period must be between 0.01 and 60 seconds");
	if (trip < 1)
		return invalid("--trip-pps must be at least 1");
	o.policy.trip_pps = static_cast<uint64_t>(trip);
	// -1 marks "not given"; a negative value given must not pass for it.
	if (vm.count("clear-pps") && clear < 1)
		return invalid("--clear-pps must be between 1 and --trip-pps (" + std::to_string(trip) + ")");
	o.policy.clear_pps = vm.count("clear-pps") ? static_cast<uint64_t>(clear) : o.policy.trip_pps;
	if (periods < 1 || periods > 3600)
		return invalid("--trip-periods must be 1..3600");
	o.policy.trip_periods = static_cast<uint32_t>(periods);
	if (!(start_pct >= 0.1 && start_pct <= 100))
		return invalid("--recovery-start must be 0.1..100 percent");
	o.policy.start_ppm = static_cast<uint32_t>(start_pct * 10000.0 + 0.5);
	if (auto ok = validate_policy(o.policy); !ok)
		return std::unexpected(ok.error());
	if (audit < 1 || audit > (1 << 24))
		return invalid("--audit-slots must be 1..16777216");
	o.audit_per_period = static_cast<uint32_t>(audit);
	if (clients < 1 || clients > 1024)
		return invalid("--max-clients must be 1..1024");
	o.max_clients = static_cast<uint32_t>(clients);
	if (sample_every < 0 || sample_every > SLUICE_SAMPLE_EVERY_MAX || (sample_every & (sample_every - 1)) != 0)
		return invalid("--sample-every " + std::to_string(sample_every) + " must be 0 (off) or a power of two up to " +
			       std::to_string(SLUICE_SAMPLE_EVERY_MAX));
	o.load.sample_every = static_cast<uint32_t>(sample_every);
	if (top_capacity < 1 || top_capacity > (1 << 20))
		return invalid("--top-capacity must be 1..1048576");
	o.top_capacity = static_cast<size_t>(top_capacity);
	if (!(o.top_window_s >= 0.1 && o.top_window_s <= 3600))
		return invalid("--top-window must be between 0.1 and 3600 seconds");
	auto lvl = parse_level(level);
	if (!lvl)
		return std::unexpected(lvl.error());
	o.log_level = *lvl;
	if (vm.count("metrics-listen")) {
		auto addr = parse_listen_address(metrics_listen);
		if (!addr)
			return std::unexpected(addr.error());
		o.metrics_listen = *addr;
	}
	return out;
}

} // namespace sluice
