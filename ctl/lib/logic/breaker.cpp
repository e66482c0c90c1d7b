#include "logic/breaker.h"

#include <algorithm>
#include <array>
#include <string>

namespace sluice {

namespace {
constexpr std::array<BreakerState, 1> from_serving{BreakerState::shedding};
constexpr std::array<BreakerState, 1> from_shedding{BreakerState::recovering};
constexpr std::array<BreakerState, 2> from_recovering{BreakerState::serving, BreakerState::shedding};
} // namespace

std::string_view to_string(BreakerState s)
{
	switch (s) {
	case BreakerState::serving:
		return "serving";
	case BreakerState::shedding:
		return "shedding";
	case BreakerState::recovering:
		return "recovering";
	}
	return "unknown";
}

std::optional<BreakerState> breaker_state_from(std::string_view name)
{
	for (auto s : {BreakerState::serving, BreakerState::shedding, BreakerState::recovering})
		if (to_string(s) == name)
			return s;
	return std::nullopt;
}

std::optional<BreakerState> breaker_state_from(uint32_t raw)
{
	if (raw >= SLUICE_BREAKER_STATES)
		return std::nullopt;
	return static_cast<BreakerState>(raw);
}

std::span<const BreakerState> Breaker::valid_targets(BreakerState from)
{
	switch (from) {
	case BreakerState::serving:
		return from_serving;
	case BreakerState::shedding:
		return from_shedding;
	case BreakerState::recovering:
		return from_recovering;
	}
	return {};
}

Status Breaker::transition(BreakerState to)
{
	auto targets = valid_targets(state_);
	if (std::find(targets.begin(), targets.end(), to) != targets.end()) {
		state_ = to;
		return {};
	}
	std::string valid;
	for (auto t : targets)
		valid += (valid.empty() ? "" : ", ") + std::string(to_string(t));
	return refused("invalid transition: " + std::string(to_string(state_)) + " -> " +
		       std::string(to_string(to)) + "; current state '" + std::string(to_string(state_)) +
		       "'; valid targets: [" + valid + "]");
}

} // namespace sluice
