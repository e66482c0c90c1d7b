#include "logic/breaker.h"

#include "base/names.h"

#include <algorithm>
#include <array>
#include <string>

namespace sluice {

namespace {
constexpr std::array<BreakerState, 1> from_serving{BreakerState::shedding};
constexpr std::array<BreakerState, 1> from_shedding{BreakerState::recovering};
constexpr std::array<BreakerState, 2> from_recovering{BreakerState::serving, BreakerState::shedding};
constexpr std::array<Named<BreakerState>, 3> kStateNames{{
	{BreakerState::serving, "serving"},
	{BreakerState::shedding, "shedding"},
	{BreakerState::recovering, "recovering"},
}};
} // namespace

std::string_view to_string(BreakerState s)
{
	return name_of(kStateNames, s);
}

std::optional<BreakerState> breaker_state_from(std::string_view name)
{
	return value_named(kStateNames, name);
}

std::string breaker_state_names()
{
	return names_of(kStateNames);
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
