// names.h - the names of an enum's values as one table of rows. The name of a
// value, the value of a name and the list an error message gives ("is not one
// of serving, shedding, recovering") all read the same rows, so they cannot
// disagree, and a value added to the enum needs one row.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace sluice {

template <class E>
struct Named {
	E value;
	std::string_view name;
};

// The name of v; `none` when no row has it (a value outside the enum's range).
template <class E, size_t N>
constexpr std::string_view name_of(const std::array<Named<E>, N> &rows, E v, std::string_view none = "unknown")
{
	for (const auto &r : rows)
		if (r.value == v)
			return r.name;
	return none;
}

template <class E, size_t N>
constexpr std::optional<E> value_named(const std::array<Named<E>, N> &rows, std::string_view name)
{
	for (const auto &r : rows)
		if (r.name == name)
			return r.value;
	return std::nullopt;
}

// "serving, shedding, recovering": the names in the rows' order.
template <class E, size_t N>
std::string names_of(const std::array<Named<E>, N> &rows)
{
	std::string out;
	for (const auto &r : rows) {
		if (!out.empty())
			out += ", ";
		out += r.name;
	}
	return out;
}

} // namespace sluice
