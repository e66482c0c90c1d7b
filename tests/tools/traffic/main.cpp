// sluice-traffic - the traffic tools of the end-to-end tests, the demo and
// the benchmarks: flood (raw frames, spoofed sources), sink (per-source UDP
// counts) and probe (a legitimate client at a steady rate). Every mode stops
// by itself; each prints one JSON line on stdout. See scripts/testbed.sh for
// the namespaces these run in.
#include "common.h"

#include <cstring>
#include <iostream>
#include <string>

using namespace sluice::traffic;

namespace {

void usage_all(std::ostream &o)
{
	o << "usage: sluice-traffic flood|sink|probe [options]   (sluice-traffic CMD --help)\n\n"
	  << kFloodUsage << "\n" << kSinkUsage << "\n" << kProbeUsage;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
	    !std::strcmp(argv[1], "help")) {
		usage_all(argc < 2 ? std::cerr : std::cout);
		return argc < 2 ? 2 : 0;
	}
	std::string cmd = argv[1];
	const char *usage = cmd == "flood" ? kFloodUsage : cmd == "sink" ? kSinkUsage : cmd == "probe" ? kProbeUsage : nullptr;
	if (!usage) {
		std::cerr << "sluice-traffic: unknown command '" << cmd << "'\n";
		usage_all(std::cerr);
		return 2;
	}
	for (int i = 2; i < argc; i++)
		if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
			std::cout << usage;
			return 0;
		}
	try {
		if (cmd == "flood")
			return run_flood(argc - 2, argv + 2);
		if (cmd == "sink")
			return run_sink(argc - 2, argv + 2);
		return run_probe(argc - 2, argv + 2);
	} catch (const UsageError &e) {
		std::cerr << "sluice-traffic " << cmd << ": " << e.what() << "\n" << usage;
		return 2;
	} catch (const std::exception &e) {
		std::cerr << "sluice-traffic " << cmd << ": " << e.what() << "\n";
		return 1;
	}
}
