#include "bpf/attach_mode.h"

#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include <cerrno>
#include <string>

namespace sluice {

Result<AttachMode> parse_attach_mode(std::string_view t)
{
	if (t == "native")
		return AttachMode::native;
	if (t == "skb")
		return AttachMode::skb;
	if (t == "auto")
		return AttachMode::automatic;
	return invalid("attach mode '" + std::string(t) + "' is not one of native, skb, auto");
}

std::string_view to_string(AttachMode m)
{
	switch (m) {
	case AttachMode::native:
		return "native";
	case AttachMode::skb:
		return "skb";
	case AttachMode::automatic:
		return "auto";
	}
	return "unknown";
}

Result<AttachMode> attached_mode(int ifindex)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	if (int err = bpf_xdp_query(ifindex, 0, &q); err)
		return fail_bpf(err, "querying XDP on ifindex " + std::to_string(ifindex));
	switch (q.attach_mode) {
	case XDP_ATTACHED_DRV:
		return AttachMode::native;
	case XDP_ATTACHED_SKB:
		return AttachMode::skb;
	default:
		return fail(ErrorKind::system, "no sluice program attached to ifindex " + std::to_string(ifindex),
			    ENOENT);
	}
}

} // namespace sluice
