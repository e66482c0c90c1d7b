// daemon.h - sluiced's wiring: options -> interfaces -> loop -> control server.
#pragma once

#include "ipc/commands.h"
#include "ipc/control_server.h"
#include "logic/classes.h"
#include "sluiced/capture_session.h"
#include "sluiced/managed_interface.h"
#include "sluiced/metrics_server.h"
#include "sluiced/options.h"
#include "sluiced/upstream_announcer.h"

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
	// status and stats: the one interface asked for (it must be managed), or none for all.
	Result<std::optional<std::string>> only(const Request &req) const;

	// The handlers, one per command of the registry (ipc/commands.h);
	// handle() has checked the arguments' types against its schema.
	struct Handler;
	static const Handler &handler(Command c);
	json status(const Request &req);
	json stats(const Request &req);
	json attach(const Request &req);
	json breaker(ManagedInterface &mi, const Request &req);
	json set(ManagedInterface &mi, const Request &req);
	json bucket(ManagedInterface &mi, const Request &req);
	json refill(ManagedInterface &mi, const Request &req);
	json list_change(ManagedInterface &mi, const Request &req); // list_add, list_del
	json list_show(ManagedInterface &mi, const Request &req);
	json detach(ManagedInterface &mi, const Request &req);
	json audit(ManagedInterface &mi, const Request &req);
	json top(ManagedInterface &mi, const Request &req);
	json standing(ManagedInterface &mi, const Request &req);
	json standing_revoke(ManagedInterface &mi, const Request &req);
	json rekey(ManagedInterface &mi, const Request &req);
	json reload(const Request &req);
	json explain(const Request &req); // refused (exit 1) for an interface not managed
	json upstream(const Request &req);
	json capture(ManagedInterface &mi, const Request &req);
	json capture_renew(ManagedInterface &mi, const Request &req);
	// End the capture on `iface`, if one runs, telling its reader why.
	void end_capture(const std::string &iface, const std::string &why);
	// The hooks the announcer asks: is a source protected on an interface
	// (allowlisted, or with standing), and an interface's deny list.
	UpstreamAnnouncer::Hooks upstream_hooks();
	// The policy file's `upstream: true` deny entries, wanted on `iface`.
	void policy_upstream(const std::string &iface);
	void publish_metrics(double tick_mono_s);

	// The policy file: read it again and apply it to `only` (none: every
	// interface). A bad file is refused, counted on each, nothing changes.
	Result<ReloadReply> reload_policy(const std::optional<std::string> &only, const std::string &why);
	// A file's identity (--policy-watch): the resolved path and the
	// target's inode, mtime and size. A Kubernetes ConfigMap volume swaps a
	// symlink, so the path's target is part of it.
	struct FileIdentity {
		std::string resolved;
		uint64_t dev = 0, ino = 0, size = 0;
		int64_t mtime_ns = 0;
		bool operator==(const FileIdentity &) const = default;
	};
	static std::optional<FileIdentity> identity_of(const std::string &path);
	// The policy file read, and its identity and every netset's it names
	// remembered in watched_ (on a refusal too, up to the file refused).
	Result<Policy> load_watched_policy();
	void watch_policy();

	DaemonOptions opts_;
	std::map<std::string, std::unique_ptr<ManagedInterface>> ifaces_;
	std::optional<ControlServer> server_;
	double started_s_ = 0;
	LoopTiming loop_;          // the loop as measured (status: daemon.loop)
	double last_tick_at_s_ = 0; // when the last tick started (0: none yet)
	// One tick started at `now`, due at `due`: the loop's measured period.
	void time_tick(double now, double due);
	std::unique_ptr<MetricsServer> metrics_; // --metrics-listen; null when off
	std::optional<Policy> file_policy_;      // the policy file as last read and applied
	struct WatchedFile {
		std::string path;
		std::optional<FileIdentity> identity; // none: it could not be looked at
	};
	std::vector<WatchedFile> watched_; // the policy file first, then its netsets
	std::unique_ptr<UpstreamAnnouncer> upstream_; // --upstream; null when off
	// Running captures, one per interface at most (capture_session.h);
	// declared after ifaces_ so that they end before the maps they use go.
	std::map<std::string, std::unique_ptr<CaptureSession>> captures_;
};

} // namespace sluice
