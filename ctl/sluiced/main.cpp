// sluiced - the sluice daemon. See daemon.h for the wiring, README for the options.
#include "sluiced/daemon.h"
#include "base/log.h"

#include <cstdio>
#include <iostream>

int main(int argc, char **argv)
{
	auto parsed = sluice::parse_daemon_options(argc, argv);
	if (!parsed) {
		std::cerr << "sluiced: " << parsed.error().describe() << "\n(sluiced --help lists the options)\n";
		return parsed.error().exit_code();
	}
	if (parsed->help) {
		std::cout << parsed->usage;
		return 0;
	}
	sluice::set_log_level(parsed->options.log_level);
	auto daemon = sluice::Daemon::start(std::move(parsed->options));
	if (!daemon) {
		sluice::log_error(daemon.error().describe());
		return daemon.error().exit_code();
	}
	return (*daemon)->run();
}
