#include "capture/filter.h"

#include <pcap/pcap.h>

namespace sluice::capture {

struct Filter::Program {
	bpf_program prog{};
	~Program() { pcap_freecode(&prog); }
};

Filter::Filter(Filter &&) noexcept = default;
Filter &Filter::operator=(Filter &&) noexcept = default;
Filter::~Filter() = default;

Result<Filter> Filter::compile(const std::string &expression, uint32_t snaplen)
{
	pcap_t *dead = pcap_open_dead(DLT_EN10MB, static_cast<int>(snaplen));
	if (!dead)
		return invalid("the filter: libpcap cannot open a dead handle");
	Filter f;
	f.prog_ = std::make_unique<Program>();
	int rc = pcap_compile(dead, &f.prog_->prog, expression.c_str(), 1, PCAP_NETMASK_UNKNOWN);
	std::string why = rc == 0 ? "" : pcap_geterr(dead);
	pcap_close(dead);
	if (rc != 0) {
		return invalid("the filter '" + expression + "' does not compile: " + why);
	}
	f.expression_ = expression;
	return f;
}

bool Filter::matches(std::string_view bytes, uint32_t wire_len) const
{
	pcap_pkthdr h{};
	h.caplen = static_cast<bpf_u_int32>(bytes.size());
	h.len = wire_len;
	return pcap_offline_filter(&prog_->prog, &h, reinterpret_cast<const u_char *>(bytes.data())) != 0;
}

} // namespace sluice::capture
