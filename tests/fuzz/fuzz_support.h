// fuzz_support.h - what every harness's LLVMFuzzerInitialize starts with.
#pragma once

#include <cstdlib>
#include <string>

namespace sluice::fuzz {

// `fuzz_NAME --write-corpus=DIR` writes the harness's seed corpus to DIR with
// `write` and exits; libFuzzer never sees the flag.
inline void write_corpus_if_asked(int argc, char **argv, void (*write)(const std::string &dir))
{
	const std::string flag = "--write-corpus=";
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a.rfind(flag, 0) == 0) {
			write(a.substr(flag.size()));
			std::exit(0);
		}
	}
}

} // namespace sluice::fuzz
