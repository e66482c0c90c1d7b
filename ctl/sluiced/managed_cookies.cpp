// managed_cookies.cpp - ManagedInterface's part in SYN cookies from XDP
// (docs/architecture.md, "SYN cookies"): whether XDP_TX's replies can leave
// the interface, the mode in force, the sysctls armed and put back, the
// cookie fields of the config, and the listeners' port hint.
#include "sluiced/managed_interface.h"

#include "sluiced/cookie_sysctls.h"
#include "sluiced/local_sockets.h"
#include "sluiced/xdp_tx_path.h"

#include "base/clock.h"
#include "base/cookie_mode.h"
#include "base/log.h"
#include "clock/dataplane_clock.h"

#include <cstring>
#include <fstream>

namespace sluice {

namespace {
uint32_t interface_mtu(const std::string &name)
{
	std::ifstream in("/sys/class/net/" + name + "/mtu");
	uint32_t mtu = 0;
	in >> mtu;
	return mtu ? mtu : 1500;
}
} // namespace

void ManagedInterface::check_xdp_tx()
{
	if (cookie_mode_ == SLUICE_COOKIES_OFF || gone_)
		return;
	auto link = read_xdp_tx_link(name_, ifindex_);
	if (!link) {
		// The interface itself unreadable (rare: it is there, as watch_link
		// saw): the last verdict stands, or, before the first, cookies as asked.
		const std::string e = link.error().describe();
		if (e != xdp_tx_error_)
			log_error(name_ + ": cannot tell whether SYN cookies' SYN-ACKs can leave: " + e + "; " +
				  (xdp_tx_ ? "the last verdict stands" : "taken as they can"));
		xdp_tx_error_ = e;
		return;
	}
	xdp_tx_error_.clear();
	XdpTxVerdict v = xdp_tx_verdict(*link);
	const std::string asked = "--cookies " + std::string(cookie_mode_name(cookie_mode_));
	if (!v.delivers && (!xdp_tx_ || xdp_tx_->delivers))
		log_warn(name_ + ": SYN cookies off on this interface (" + asked + " asked): " + v.why +
			 "; a SYN without standing draws on the newcomer budget instead. Fix: " + v.fix);
	else if (v.delivers && xdp_tx_ && !xdp_tx_->delivers)
		log_info(name_ + ": SYN cookies back on (" + asked + "): " + v.why);
	else if (v.delivers && !xdp_tx_)
		log_info(name_ + ": SYN cookies' SYN-ACKs can leave: " + v.why);
	xdp_tx_ = std::move(v);
}

sluice_cookie_mode ManagedInterface::cookie_mode_in_force_now() const
{
	return xdp_tx_ ? cookie_mode_in_force(cookie_mode_, *xdp_tx_) : cookie_mode_;
}

void ManagedInterface::apply_cookies(double now_s, BreakerState state, sluice_config &next)
{
	// Where the SYN-ACKs cannot leave the mode in force is off: nothing to
	// arm, and config says so to the program (and to status from the pins).
	const sluice_cookie_mode mode = cookie_mode_in_force_now();
	bool want = mode == SLUICE_COOKIES_ALWAYS ||
		    (mode == SLUICE_COOKIES_SHEDDING &&
		     (state == BreakerState::shedding || now_s - shed_left_s_ < defaults::kCookieGraceS));
	CookieSysctls &sysctls = cookie_sysctls();
	if (want && !sysctls.held_by(name_)) {
		if (auto ok = sysctls.arm(name_, next); !ok) {
			if (ok.error().describe() != cookie_error_)
				log_error(name_ + ": SYN cookies are not armed: " + ok.error().describe() +
					  "; SYNs without standing go to the newcomer budget instead");
			cookie_error_ = ok.error().describe();
		} else {
			cookie_error_.clear();
		}
	} else if (!want && sysctls.held_by(name_)) {
		if (auto ok = sysctls.disarm(name_, next); !ok)
			log_error(name_ + ": " + ok.error().describe());
	}
	TcpSettings now = CookieSysctls::read_now();
	uint32_t mtu = interface_mtu(name_);
	next.cookie_mode = mode;
	// With the feeders every connection's peer has standing: an ACK on the
	// cookie path is then a cookie or a forgery, checked without the lookup.
	next.cookie_acks_unlooked = dp_->feeders_attached() ? 1 : 0;
	next.cookie_flags = cookie_flags_for(now);
	next.cookie_wscale = cookie_wscale_for(now);
	next.cookie_mss4 = cookie_mss_for(mtu, false);
	next.cookie_mss6 = cookie_mss_for(mtu, true);
	// The SYN stamps: asked of an ACK only a grace after the cookie path
	// comes into force (ALWAYS, or shedding), so that the ACK of a SYN the
	// stack answered before (while serving or recovering) is still checked.
	if (!cookie_path_in_force(mode, state == BreakerState::shedding))
		cookie_acks_stamped_from_ = 0;
	else if (!cookie_acks_stamped_from_)
		restart_cookie_stamp_grace();
	next.cookie_acks_stamped_from = cookie_acks_stamped_from_;
}

void ManagedInterface::restart_cookie_stamp_grace()
{
	cookie_acks_stamped_from_ = dataplane_now() + static_cast<uint64_t>(defaults::kCookieStampGraceS * 1e9);
}

void ManagedInterface::mark_listeners()
{
	listeners_marked_s_ = monotonic_seconds();
	auto ports = listening_tcp_ports();
	Status ok = ports ? dp_->listen_ports().mark(*ports) : Status(std::unexpected(ports.error()));
	std::string error = ok ? "" : ok.error().describe();
	if (!ok && error != listeners_error_)
		log_error(name_ + ": the listening TCP ports are not marked for the cookie path: " + error +
			  "; SYNs to a listener older than this program may go to the newcomer budget");
	listeners_error_ = error;
	// The host's own addresses, which no feeder grants (the same rescan:
	// addresses change as rarely as listeners).
	auto own = dp_->standing().set_own_addresses(interface_addresses());
	if (!own && !own_error_)
		log_error(name_ + ": the host's own addresses are not marked: " + own.error().describe() +
			  "; a connection to one of them may grant it standing");
	own_error_ = !own;
}

void ManagedInterface::release_cookies()
{
	shed_left_s_ = -1e18;
	cookie_mode_ = SLUICE_COOKIES_OFF; // what is wanted from an exiting daemon: nothing armed
	auto cfg = dp_->config().read();
	if (!cfg)
		return;
	sluice_config next = *cfg;
	if (cookie_sysctls().held_by(name_)) {
		if (auto ok = cookie_sysctls().disarm(name_, next); !ok)
			log_error(name_ + ": " + ok.error().describe());
		if (auto ok = dp_->config().write(next); !ok)
			log_error(name_ + ": " + ok.error().describe());
	}
}

} // namespace sluice
