#include "bpf/attachment.h"

#include <bpf/bpf.h>

namespace sluice {

Result<uint32_t> Attachment::prog_id() const
{
	bpf_prog_info info{};
	uint32_t len = sizeof(info);
	if (int err = bpf_obj_get_info_by_fd(prog_fd(), &info, &len); err)
		return fail_bpf(err, "reading program info");
	return info.id;
}

} // namespace sluice
