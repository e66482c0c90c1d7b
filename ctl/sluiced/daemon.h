// daemon.h - sluiced's wiring: options -> interfaces -> loop -> control server.
#pragma once

#include "ipc/control_server.h"
#include "sluiced/managed_interface.h"
#include "sluiced/metrics_server.h"
#include "sluiced/options.h"

#include <map>
#include <memory>
#include <string>

namespace sluice {

class Daemon {
public:
	static Result<std::unique_ptr<Daemon>> start(DaemonOptions opts);
	// Serve until SIGTERM/SIGINT. Enforcement stays attached on exit unless
	// --detach-on-exit. Returns the process exit code.
	int run();

	json handle(const Request &req);

private:
	Daemon() = default;
	Result<ManagedInterface *> find(const Request &req);
	json status(const Request &req);
	void publish_metrics(double tick_mono_s);

	DaemonOptions opts_;
	std::map<std::string, std::unique_ptr<ManagedInterface>> ifaces_;
	std::optional<ControlServer> server_;
	double started_s_ = 0;
	std::unique_ptr<MetricsServer> metrics_; // --metrics-listen; null when off
};

} // namespace sluice
