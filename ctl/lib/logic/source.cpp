#include "logic/source.h"

#include "bpf/source_key.h"

#include <cstring>

namespace sluice {

SourceSlots source_slots(const sluice_settings &s, const Address &addr)
{
	sluice_source src{};
	bool v6 = addr.family == Family::v6;
	std::memcpy(src.w, addr.bytes.data(), v6 ? 16 : 4);
	sluice_mask_source(&src, v6, &s);
	const __u64 key[2] = {s.hash_key[0], s.hash_key[1]};
	sluice_slot_pair pair = sluice_slots_of(sluice_source_hash(key, &src, v6), s.slot_mask, s.one_choice);

	SourceSlots out;
	out.source.addr.family = addr.family;
	std::memcpy(out.source.addr.bytes.data(), src.w, v6 ? 16 : 4);
	out.source.prefix = v6 ? s.v6_prefix : s.v4_prefix;
	out.slots = {pair.a, pair.b};
	return out;
}

SourceSlots class_source_slots(const sluice_settings &s, const Address &addr, uint32_t class_id, uint32_t v4_prefix,
			       uint32_t v6_prefix)
{
	sluice_source src{};
	bool v6 = addr.family == Family::v6;
	std::memcpy(src.w, addr.bytes.data(), v6 ? 16 : 4);
	sluice_mask_prefixes(&src, v6, v4_prefix, v6_prefix);
	const __u64 key[2] = {s.hash_key[0], s.hash_key[1]};
	__u64 class_key[2];
	sluice_class_key(key, class_id, class_key);
	sluice_slot_pair pair = sluice_slots_of(sluice_source_hash(class_key, &src, v6), s.slot_mask, s.one_choice);

	SourceSlots out;
	out.source.addr.family = addr.family;
	std::memcpy(out.source.addr.bytes.data(), src.w, v6 ? 16 : 4);
	out.source.prefix = v6 ? v6_prefix : v4_prefix;
	out.slots = {pair.a, pair.b};
	return out;
}

uint64_t source_hash(const sluice_settings &s, const Address &addr)
{
	sluice_source src{};
	bool v6 = addr.family == Family::v6;
	std::memcpy(src.w, addr.bytes.data(), v6 ? 16 : 4);
	if (v6)
		sluice_mask_v6(&src, s.v6_prefix);
	else
		src.w[0] = sluice_mask_v4(static_cast<uint32_t>(src.w[0]), s.v4_prefix);
	const __u64 key[2] = {s.hash_key[0], s.hash_key[1]};
	return sluice_source_hash(key, &src, v6);
}

} // namespace sluice
