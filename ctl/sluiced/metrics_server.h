// metrics_server.h - /metrics and /healthz over HTTP (cpp-httplib), off the
// control loop.
//
// The control loop publishes a MetricsSnapshot once per period: it builds the
// snapshot on its own and swaps a pointer under a mutex, so it never waits on
// HTTP. The server runs in its own thread (with a small worker pool; every
// signal blocked, so SIGTERM still reaches the loop's signalfd) and renders the
// latest snapshot for each scrape. A slow or stuck scraper holds a worker, at
// most for the read/write timeout, never the loop.
//
//   GET /metrics  200, Prometheus text format 0.0.4 (render_metrics)
//   GET /healthz  200 "ok" when the last published tick is at most
//                 stale_after_s old, else 503 naming its age
#pragma once

#include "sluiced/metrics.h"
#include "base/result.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

namespace httplib {
class Server;
}

namespace sluice {

class MetricsServer {
public:
	// Bind now (so a taken port fails the start), serve from a thread.
	// Port 0 binds an ephemeral port (tests); port() tells which.
	static Result<std::unique_ptr<MetricsServer>> start(const ListenAddress &addr, double stale_after_s);
	~MetricsServer();
	MetricsServer(const MetricsServer &) = delete;
	MetricsServer &operator=(const MetricsServer &) = delete;

	uint16_t port() const { return port_; }

	// Called by the control loop: O(1) under the mutex.
	void publish(MetricsSnapshot snapshot);

	// What the handlers serve (also for tests): status code and body.
	std::pair<int, std::string> healthz(double now_mono_s) const;
	std::string metrics() const;

private:
	MetricsServer() = default;
	std::shared_ptr<const MetricsSnapshot> latest() const;

	std::unique_ptr<httplib::Server> http_;
	std::thread thread_;
	std::atomic<bool> done_{false};
	uint16_t port_ = 0;
	double stale_after_s_ = 5;
	mutable std::mutex mu_;
	std::shared_ptr<const MetricsSnapshot> snapshot_; // guarded by mu_
};

} // namespace sluice
