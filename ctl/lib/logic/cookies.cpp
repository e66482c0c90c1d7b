#include "logic/cookies.h"

#include "bpf/cookie.h"

#include <algorithm>
#include <bit>

namespace sluice {

std::vector<SysctlChange> cookie_arming(const TcpSettings &now)
{
	std::vector<SysctlChange> out;
	if (now.syncookies != 2)
		out.push_back({kSysctlSyncookies, now.syncookies, 2});
	if (now.timestamps == 1)
		out.push_back({kSysctlTimestamps, now.timestamps, 2});
	return out;
}

uint32_t cookie_flags_for(const TcpSettings &s)
{
	uint32_t f = 0;
	if (s.timestamps == 2)
		f |= SLUICE_COOKIE_TS;
	if (s.sack != 0)
		f |= SLUICE_COOKIE_SACK;
	if (s.window_scaling != 0)
		f |= SLUICE_COOKIE_WSCALE;
	return f;
}

uint32_t cookie_wscale_for(const TcpSettings &s)
{
	uint64_t space = uint64_t(std::max<int64_t>({s.tcp_rmem_max, s.rmem_max, 1}));
	int shift = int(std::bit_width(space)) - 1 - 15; // ilog2(space) - 15
	return uint32_t(std::clamp(shift, 0, int(SLUICE_TCP_MAX_WSCALE)));
}

uint16_t cookie_mss_for(uint32_t mtu, bool v6)
{
	uint32_t headers = v6 ? 60 : 40;
	uint32_t mss = mtu > headers ? mtu - headers : 0;
	return uint16_t(std::clamp<uint32_t>(mss, 536, 65495));
}

} // namespace sluice
