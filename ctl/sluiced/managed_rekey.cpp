// managed_rekey.cpp - a new hash key for one interface (Dataplane::rekey):
// by the operator (`sluicectl rekey`) or on the schedule (--rekey-every),
// which waits while the breaker is not serving: a rekey makes every bucket
// anew, and a flood's sources need not get that burst while it is shed.
#include "sluiced/managed_interface.h"

#include "base/clock.h"
#include "base/log.h"

#include <cstdio>

namespace sluice {

Result<RekeyResult> ManagedInterface::rekey(const std::string &why)
{
	// The new key puts every source's SYN stamp in another slot of a new
	// map: ACKs are checked whole for a grace again, written before the
	// new program can ask.
	if (cookie_acks_stamped_from_)
		if (auto cfg = dp_->config().read()) {
			sluice_config next = *cfg;
			restart_cookie_stamp_grace();
			next.cookie_acks_stamped_from = cookie_acks_stamped_from_;
			if (auto ok = write_config(*cfg, next); !ok)
				log_error(name_ + ": the SYN stamps' grace before a new key: " + ok.error().describe());
		}
	auto r = dp_->rekey(dir_);
	if (!r) {
		log_error(name_ + ": a new hash key (" + why + ") was refused, the old one stays in force: " +
			  r.error().describe());
		return std::unexpected(r.error());
	}
	rekeys_++;
	const double now_s = monotonic_seconds();
	last_rekey_s_ = now_s;
	if (rekey_every_s_ > 0)
		next_rekey_s_ = now_s + rekey_every_s_;
	// The standing count and the prefix quota's sweep start again on the
	// new table (its places are the new key's).
	sweep_ = {};
	const RekeyReport &k = *r;
	char took[32];
	std::snprintf(took, sizeof(took), "%.1f", k.took_ms);
	log_info(name_ + ": new hash key (" + why + "): program " + std::to_string(k.prog_id_before) + " -> " +
		 std::to_string(k.prog_id_after) + " in " + took + " ms; every bucket anew (full); standing carried: " +
		 std::to_string(k.carried.entries) + " entries (" + std::to_string(k.carried_late) +
		 " granted during the change), " + std::to_string(k.carried.penalties) + " penalties");
	if (k.carried.entries_lost || k.carried.penalties_lost)
		log_warn(name_ + ": the new key put " + std::to_string(k.carried.entries_lost) + " standing entries and " +
			 std::to_string(k.carried.penalties_lost) +
			 " penalties where their set was full of others: they are lost (an entry is earned again by its "
			 "next handshake)");
	RekeyResult out{name_, k, rekeys_, std::nullopt};
	if (rekey_every_s_ > 0)
		out.next_rekey_in_s = next_rekey_s_ - now_s;
	return out;
}

void ManagedInterface::rekey_when_due(double now_s)
{
	if (rekey_every_s_ <= 0 || now_s < next_rekey_s_ || breaker_.state() != BreakerState::serving)
		return;
	if (!rekey("every " + std::to_string(uint64_t(rekey_every_s_)) + " s (--rekey-every)"))
		next_rekey_s_ = now_s + std::min(rekey_every_s_, 60.0); // tried again, not every period
}

} // namespace sluice
