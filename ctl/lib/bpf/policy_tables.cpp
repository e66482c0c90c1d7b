#include "bpf/policy_tables.h"

#include "bpf/class_maps.h"
#include "bpf/class_match.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <array>
#include <cstring>

namespace sluice {

namespace {

// A list or class trie's key (sluice_abi.h): the set byte, then the prefix.
template <class Key>
Key set_key(uint32_t set, const Cidr &c)
{
	Key k{};
	k.prefixlen = SLUICE_LPM_SET_BITS + c.prefix;
	k.set = static_cast<uint8_t>(set);
	std::memcpy(k.addr, c.addr.bytes.data(), sizeof(k.addr));
	return k;
}

bool batch_unsupported(int err)
{
	return err == -EINVAL || err == -EOPNOTSUPP || err == -524 /* ENOTSUPP */;
}

// Write `count` packed keys and values: one batched syscall where the map
// type has it, else one at a time.
int update_many(int fd, const void *keys, size_t key_size, const void *values, size_t value_size, size_t count)
{
	if (count == 0)
		return 0;
	uint32_t n = static_cast<uint32_t>(count);
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	int err = bpf_map_update_batch(fd, keys, values, &n, &opts);
	if (!batch_unsupported(err))
		return err;
	auto *k = static_cast<const uint8_t *>(keys);
	auto *v = static_cast<const uint8_t *>(values);
	for (size_t i = 0; i < count; i++)
		if ((err = bpf_map_update_elem(fd, k + i * key_size, v + i * value_size, BPF_ANY)))
			return err;
	return 0;
}

// Every key of an LPM trie, by policy set (the set byte follows prefixlen).
template <class Key>
Result<std::array<std::vector<Key>, SLUICE_POLICY_SETS>> keys_by_set(int fd)
{
	std::array<std::vector<Key>, SLUICE_POLICY_SETS> out;
	Key cur{}, next{};
	void *prev = nullptr;
	int err;
	while ((err = bpf_map_get_next_key(fd, prev, &next)) == 0) {
		if (next.set < SLUICE_POLICY_SETS)
			out[next.set].push_back(next);
		cur = next;
		prev = &cur;
	}
	if (err != -ENOENT)
		return fail_bpf(err, "walking a policy trie");
	return out;
}

template <class Key>
Status delete_keys(int fd, std::vector<Key> keys, uint32_t set)
{
	if (keys.empty())
		return {};
	uint32_t n = static_cast<uint32_t>(keys.size());
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	int err = bpf_map_delete_batch(fd, keys.data(), &n, &opts);
	if (batch_unsupported(err)) {
		err = 0;
		for (const auto &k : keys)
			if (int e = bpf_map_delete_elem(fd, &k); e && e != -ENOENT) {
				err = e;
				break;
			}
	}
	if (err)
		return fail_bpf(err, "deleting policy set " + std::to_string(set) + "'s entries");
	return {};
}

template <class Key, class Value>
Status write_entries(int fd, uint32_t set, const std::vector<std::pair<Cidr, Value>> &entries, const char *what)
{
	std::vector<Key> keys;
	std::vector<Value> values;
	keys.reserve(entries.size());
	values.reserve(entries.size());
	for (const auto &[c, v] : entries) {
		keys.push_back(set_key<Key>(set, c));
		values.push_back(v);
	}
	if (int err = update_many(fd, keys.data(), sizeof(Key), values.data(), sizeof(Value), keys.size()); err) {
		std::string why = err == -ENOSPC || err == -E2BIG
					  ? " (a trie holds at most " + std::to_string(SLUICE_LIST_MAX_ENTRIES) +
						    " prefixes per family and set)"
					  : "";
		return fail_bpf(err, std::string("writing ") + std::to_string(entries.size()) + " " + what +
					     " entries into policy set " + std::to_string(set) + why);
	}
	return {};
}

} // namespace

// The keys of the class tries, by set.
struct PolicyTables::TrieKeys {
	std::array<std::vector<sluice_lpm_v4>, SLUICE_POLICY_SETS> v4;
	std::array<std::vector<sluice_lpm_v6>, SLUICE_POLICY_SETS> v6;
};

Result<PolicyTables::TrieKeys> PolicyTables::walk() const
{
	TrieKeys k;
	auto a = keys_by_set<sluice_lpm_v4>(fds_.class_v4);
	if (!a)
		return std::unexpected(a.error());
	k.v4 = std::move(*a);
	auto b = keys_by_set<sluice_lpm_v6>(fds_.class_v6);
	if (!b)
		return std::unexpected(b.error());
	k.v6 = std::move(*b);
	return k;
}

Result<uint32_t> PolicyTables::set_in_force() const
{
	auto cfg = config_.read();
	if (!cfg)
		return std::unexpected(cfg.error());
	return SLUICE_POLICY_SET_OF(cfg->policy_flags);
}

Result<ClassIds> PolicyTables::ids_in_force() const
{
	auto set = set_in_force();
	if (!set)
		return std::unexpected(set.error());
	auto records = read_classes(fds_.classes, *set);
	if (!records)
		return std::unexpected(records.error());
	ClassIds ids;
	for (const auto &r : *records)
		if (r.id < SLUICE_CLASSES_MAX)
			ids.names[r.id] = r.name;
	return ids;
}

Status PolicyTables::clear_set(uint32_t set) const
{
	auto keys = walk();
	if (!keys)
		return std::unexpected(keys.error());
	return clear_set(set, *keys);
}

Status PolicyTables::clear_set(uint32_t set, const TrieKeys &keys) const
{
	if (auto ok = delete_keys(fds_.class_v4, keys.v4[set], set); !ok)
		return ok;
	if (auto ok = delete_keys(fds_.class_v6, keys.v6[set], set); !ok)
		return ok;
	if (auto ok = lists_.clear(set); !ok)
		return ok;
	std::vector<uint32_t> ids(SLUICE_CLASSES_MAX);
	for (uint32_t id = 0; id < SLUICE_CLASSES_MAX; id++)
		ids[id] = sluice_class_index(set, id);
	std::vector<sluice_class> zero(SLUICE_CLASSES_MAX);
	if (int err = update_many(fds_.classes, ids.data(), sizeof(uint32_t), zero.data(), sizeof(sluice_class),
				  ids.size());
	    err)
		return fail_bpf(err, "zeroing policy set " + std::to_string(set) + "'s class records");
	std::vector<uint32_t> blocks(SLUICE_L4_KINDS * SLUICE_PORT_BLOCKS);
	for (uint32_t i = 0; i < blocks.size(); i++)
		blocks[i] = sluice_port_block_index(set, i / SLUICE_PORT_BLOCKS, (i % SLUICE_PORT_BLOCKS) * SLUICE_PORTS_PER_BLOCK);
	std::vector<sluice_port_block> none(blocks.size());
	if (int err = update_many(fds_.port_classes, blocks.data(), sizeof(uint32_t), none.data(),
				  sizeof(sluice_port_block), blocks.size());
	    err)
		return fail_bpf(err, "zeroing policy set " + std::to_string(set) + "'s port table");
	return {};
}

Status PolicyTables::write_set(uint32_t set, const CompiledPolicy &c, const PolicyLists &lists) const
{
	std::vector<uint32_t> ids(SLUICE_CLASSES_MAX);
	for (uint32_t id = 0; id < SLUICE_CLASSES_MAX; id++)
		ids[id] = sluice_class_index(set, id);
	if (int err = update_many(fds_.classes, ids.data(), sizeof(uint32_t), c.classes.data(), sizeof(sluice_class),
				  ids.size());
	    err)
		return fail_bpf(err, "writing policy set " + std::to_string(set) + "'s class records");
	if (!c.ports.empty()) {
		if (c.ports.size() != size_t(SLUICE_L4_KINDS) * SLUICE_PORT_BLOCKS)
			return refused("a compiled port table of " + std::to_string(c.ports.size()) + " blocks (it has " +
				       std::to_string(SLUICE_L4_KINDS * SLUICE_PORT_BLOCKS) + ")");
		std::vector<uint32_t> blocks(c.ports.size());
		for (uint32_t i = 0; i < blocks.size(); i++)
			blocks[i] = sluice_port_block_index(set, i / SLUICE_PORT_BLOCKS,
							    (i % SLUICE_PORT_BLOCKS) * SLUICE_PORTS_PER_BLOCK);
		if (int err = update_many(fds_.port_classes, blocks.data(), sizeof(uint32_t), c.ports.data(),
					  sizeof(sluice_port_block), blocks.size());
		    err)
			return fail_bpf(err, "writing policy set " + std::to_string(set) + "'s port table");
	}
	if (auto ok = write_entries<sluice_lpm_v4>(fds_.class_v4, set, c.prefixes_v4, "class IPv4 prefix"); !ok)
		return ok;
	if (auto ok = write_entries<sluice_lpm_v6>(fds_.class_v6, set, c.prefixes_v6, "class IPv6 prefix"); !ok)
		return ok;
	for (ListKind list : {ListKind::allow, ListKind::deny}) {
		if (auto ok = lists_.insert(list, set, lists.file(list), ListOrigin::file); !ok)
			return ok;
		if (auto ok = lists_.insert(list, set, lists.kept(list), ListOrigin::run_time); !ok)
			return ok;
	}
	return {};
}

Result<AppliedSet> PolicyTables::apply(const CompiledPolicy &c, const PolicyLists &lists, const ConfigEdit &edit) const
{
	auto in_force = set_in_force();
	if (!in_force)
		return std::unexpected(in_force.error());
	uint32_t old_set = *in_force, new_set = old_set ^ 1;
	auto undo = [&](const Error &e) -> std::unexpected<Error> {
		(void)clear_set(new_set);
		return std::unexpected(Error{e.kind, e.code, e.message + "; the policy in force is unchanged"});
	};
	// One walk of the tries: what the set not in force still holds (a
	// daemon stopped during an earlier apply) is cleared now, what the set
	// in force holds after the flip.
	auto keys = walk();
	if (!keys)
		return std::unexpected(keys.error());
	if (auto ok = clear_set(new_set, *keys); !ok)
		return undo(ok.error());
	if (auto ok = write_set(new_set, c, lists); !ok)
		return undo(ok.error());

	AppliedSet out;
	out.set = new_set;
	// The list bits from what the new set holds, as PrefixLists counted it
	// writing it (which map each entry went to is its call).
	auto held = lists_.list_flags(new_set);
	if (!held)
		return undo(held.error());
	uint32_t flags = (c.class_flags & SLUICE_CLASS_ANY) | (new_set ? SLUICE_POLICY_SET : 0) | *held;
	out.policy_flags = flags;
	auto cfg = config_.read();
	if (!cfg)
		return undo(cfg.error());
	sluice_config next = *cfg;
	if (edit) {
		auto edited = edit(*cfg);
		if (!edited)
			return undo(edited.error());
		next = *edited;
	}
	next.policy_flags = flags;
	if (auto ok = config_.write(next); !ok)
		return undo(ok.error());

	// The flip is made: the old set is read by no frame that starts now.
	// (A frame that read the old flags just before may still be looking it
	// up; its entries are deleted one by one under RCU, so it sees either.)
	if (auto ok = clear_set(old_set, *keys); !ok)
		out.warning = "clearing the old policy set " + std::to_string(old_set) +
			      " failed (no frame reads it; the next reload clears it first): " + ok.error().describe();
	for (const auto &n : c.ids.names)
		out.classes += !n.empty();
	out.prefixes = c.prefixes_v4.size() + c.prefixes_v6.size();
	out.list_entries = lists.size();
	return out;
}

} // namespace sluice
