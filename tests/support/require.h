// Tests that need the kernel (bpf, netns, fuzz) call SLUICE_REQUIRE_ROOT()
// first. Outside CI they skip with a one-line reason when they cannot run; in
// CI (CI=true) they fail loudly instead, so a green run means they ran.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

namespace sluice::test {

inline bool in_ci()
{
	const char *ci = std::getenv("CI");
	return ci && (std::strcmp(ci, "true") == 0 || std::strcmp(ci, "1") == 0);
}

}  // namespace sluice::test

// Skip (outside CI) or fail (in CI) with `why`.
#define SLUICE_CANNOT_RUN(why)                                                   \
	do {                                                                     \
		if (::sluice::test::in_ci())                                     \
			FAIL() << "cannot run in CI: " << (why);                 \
		else                                                             \
			GTEST_SKIP() << (why);                                   \
	} while (0)

#define SLUICE_REQUIRE_ROOT()                                                    \
	do {                                                                     \
		if (geteuid() != 0)                                              \
			SLUICE_CANNOT_RUN("needs root (BPF and network namespaces)"); \
	} while (0)
