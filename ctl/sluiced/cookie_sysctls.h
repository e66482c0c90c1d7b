// cookie_sysctls.h - the two sysctls SYN cookies from XDP need
// (logic/cookies.h: net.ipv4.tcp_syncookies = 2, tcp_timestamps = 2), armed
// while an interface of this daemon needs them and put back when none does.
// They are the protected namespace's (the daemon's own), shared by its
// interfaces, so one object holds them for all: the first holder arms, the
// last one out puts back what was there. Each holder's config keeps what was
// there (cookie_sysctls_armed, cookie_*_was), so that a daemon restarted
// after SIGKILL puts back the values from before, not the armed ones it
// finds.
#pragma once

#include "base/result.h"
#include "bpf/sluice_abi.h"
#include "logic/cookies.h"

#include <optional>
#include <set>
#include <string>

namespace sluice {

class CookieSysctls {
public:
	// Arm for `holder` (a no-op when it holds them); the values from before
	// go into cfg's bookkeeping. An error (a read-only /proc/sys, say) names
	// the setting and the fix; nothing is held then.
	Status arm(const std::string &holder, sluice_config &cfg);
	// `holder` needs them no more: put back when it was the last. cfg's
	// bookkeeping is cleared.
	Status disarm(const std::string &holder, sluice_config &cfg);
	// A restarted daemon found cfg armed: `holder` holds them again with
	// cfg's values from before.
	void adopt(const std::string &holder, const sluice_config &cfg);
	bool held_by(const std::string &holder) const { return holders_.count(holder) != 0; }

	// The settings as they are now (the defaults of TcpSettings for any that
	// cannot be read).
	static TcpSettings read_now();

private:
	std::set<std::string> holders_;
	std::optional<TcpSettings> was_; // while held
};

// The daemon's one instance.
CookieSysctls &cookie_sysctls();

} // namespace sluice
