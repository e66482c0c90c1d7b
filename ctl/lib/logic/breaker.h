// breaker.h - the breaker's state machine, and nothing else.
//
//   serving -> shedding -> recovering -> serving
//                              \-> shedding
//
// There is deliberately no shedding -> serving edge: after a flood the way
// back to full admission goes through recovering, where the refill policy
// ramps the admission fraction up, so the herd cannot return at once.
// The data plane only reads the state (config.breaker_state); the daemon's
// Breaker is the only writer.
#pragma once

#include "base/result.h"
#include "bpf/sluice_abi.h"

#include <optional>
#include <span>
#include <string_view>

namespace sluice {

enum class BreakerState : uint32_t {
	serving = SLUICE_SERVING,
	shedding = SLUICE_SHEDDING,
	recovering = SLUICE_RECOVERING,
};

std::string_view to_string(BreakerState s);
std::optional<BreakerState> breaker_state_from(std::string_view name);
// "serving, shedding, recovering", for messages that list them.
std::string breaker_state_names();
std::optional<BreakerState> breaker_state_from(uint32_t raw);

class Breaker {
public:
	explicit Breaker(BreakerState initial = BreakerState::serving) : state_(initial) {}

	BreakerState state() const { return state_; }

	// The states reachable from `from` in one move.
	static std::span<const BreakerState> valid_targets(BreakerState from);

	// Move to `to`, or refuse and change nothing:
	// "invalid transition: shedding -> serving; current state 'shedding';
	//  valid targets: [recovering]"
	Status transition(BreakerState to);

private:
	BreakerState state_;
};

} // namespace sluice
