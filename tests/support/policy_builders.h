// policy_builders.h - short ways to write policies and frames in tests of
// logic/classes, logic/class_tables and the policy file: an address or a
// prefix from text (a typo fails the test where it is written), a policy of
// named classes, a rule, a frame. gtest only; header-only.
#pragma once

#include "base/address.h"
#include "logic/classes.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace sluice::test {

inline Cidr cidr(const std::string &text)
{
	auto c = parse_cidr(text);
	EXPECT_TRUE(c) << text;
	return c ? *c : Cidr{};
}

inline Address addr(const std::string &text)
{
	auto a = parse_address(text);
	EXPECT_TRUE(a) << text;
	return a ? *a : Address{};
}

// default + the named limit classes, in order (indices 1, 2, ...).
inline Policy with_classes(std::initializer_list<const char *> names)
{
	Policy p = default_policy();
	for (const char *n : names)
		p.classes.emplace_back().name = n;
	return p;
}

inline ClassRule rule(size_t cls, std::vector<Cidr> sources, Protocol proto = Protocol::any,
		      std::optional<PortSpan> ports = std::nullopt)
{
	return ClassRule{std::move(sources), proto, ports, cls, 0};
}

inline Frame frame(const std::string &src, Protocol p = Protocol::any, uint16_t port = 0)
{
	return Frame{addr(src), p, port};
}

} // namespace sluice::test
