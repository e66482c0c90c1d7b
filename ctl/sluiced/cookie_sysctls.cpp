#include "sluiced/cookie_sysctls.h"

#include "base/log.h"
#include "base/sysctl.h"

namespace sluice {

CookieSysctls &cookie_sysctls()
{
	static CookieSysctls the;
	return the;
}

TcpSettings CookieSysctls::read_now()
{
	TcpSettings s;
	auto one = [](const char *name, int64_t &into) {
		if (auto v = read_sysctl(name))
			into = *v;
	};
	one(kSysctlSyncookies, s.syncookies);
	one(kSysctlTimestamps, s.timestamps);
	one(kSysctlSack, s.sack);
	one(kSysctlWindowScaling, s.window_scaling);
	one(kSysctlRmemMax, s.rmem_max);
	if (auto v = read_sysctl_values(kSysctlTcpRmem); v && v->size() == 3)
		s.tcp_rmem_max = (*v)[2];
	return s;
}

namespace {
void record(sluice_config &cfg, const TcpSettings &was)
{
	cfg.cookie_sysctls_armed = 1;
	cfg.cookie_syncookies_was = uint32_t(was.syncookies);
	cfg.cookie_timestamps_was = uint32_t(was.timestamps);
}
} // namespace

Status CookieSysctls::arm(const std::string &holder, sluice_config &cfg)
{
	if (held_by(holder)) {
		record(cfg, *was_);
		return {};
	}
	if (!was_) {
		TcpSettings now = read_now();
		std::vector<SysctlChange> done;
		for (const SysctlChange &c : cookie_arming(now)) {
			if (auto ok = write_sysctl(c.name, c.to); !ok) {
				for (const SysctlChange &d : done) // all or nothing
					(void)write_sysctl(d.name, d.from);
				return fail(ok.error().kind,
					    ok.error().describe() + ": SYN cookies from XDP need " + c.name + " = " +
						    std::to_string(c.to) + " in the protected namespace; set it there "
						    "(sysctl -w " + c.name + "=" + std::to_string(c.to) +
						    ") or run sluiced where /proc/sys is writable");
			}
			done.push_back(c);
			log_info("SYN cookies armed: " + c.name + " " + std::to_string(c.from) + " -> " +
				 std::to_string(c.to) + " (put back when no interface needs them)");
		}
		was_ = now;
	}
	holders_.insert(holder);
	record(cfg, *was_);
	return {};
}

void CookieSysctls::adopt(const std::string &holder, const sluice_config &cfg)
{
	if (!cfg.cookie_sysctls_armed)
		return;
	if (!was_) {
		TcpSettings was = read_now();
		was.syncookies = cfg.cookie_syncookies_was;
		was.timestamps = cfg.cookie_timestamps_was;
		was_ = was;
	}
	holders_.insert(holder);
}

Status CookieSysctls::disarm(const std::string &holder, sluice_config &cfg)
{
	cfg.cookie_sysctls_armed = 0;
	cfg.cookie_syncookies_was = 0;
	cfg.cookie_timestamps_was = 0;
	if (!holders_.erase(holder) || !holders_.empty() || !was_)
		return {};
	TcpSettings was = *was_;
	was_.reset();
	Status result;
	TcpSettings now = read_now();
	for (auto [name, from, to] : {SysctlChange{kSysctlSyncookies, now.syncookies, was.syncookies},
				      SysctlChange{kSysctlTimestamps, now.timestamps, was.timestamps}}) {
		if (from == to)
			continue;
		if (auto ok = write_sysctl(name, to); !ok) {
			log_error("putting back " + name + ": " + ok.error().describe());
			result = ok;
			continue;
		}
		log_info("SYN cookies disarmed: " + name + " " + std::to_string(from) + " -> " + std::to_string(to) +
			 " (as it was)");
	}
	return result;
}

} // namespace sluice
