// sluicectl.h - the whole CLI as one call, so tests can run it in-process.
#pragma once

#include <ostream>

// Run `sluicectl argv[1..]`: normal output to `out`, errors (one line each) to
// `err`. Returns the exit code: 0 ok, 1 refused or system error, 2 usage or
// input error.
int sluicectl_main(int argc, char **argv, std::ostream &out, std::ostream &err);
