#include "bpf/attach_mode.h"

#include "base/names.h"

#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include <cerrno>
#include <string>

namespace sluice {

namespace {
constexpr std::array<Named<AttachMode>, 3> kModeNames{{
	{AttachMode::native, "native"},
	{AttachMode::skb, "skb"},
	{AttachMode::automatic, "auto"},
}};
} // namespace

Result<AttachMode> parse_attach_mode(std::string_view t)
{
	if (auto m = value_named(kModeNames, t))
		return *m;
	return invalid("attach mode '" + std::string(t) + "' is not one of " + names_of(kModeNames));
}

std::string_view to_string(AttachMode m)
{
	return name_of(kModeNames, m);
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
