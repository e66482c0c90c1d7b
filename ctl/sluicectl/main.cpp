// main.cpp - sluicectl, the operator CLI of sluiced. All of it lives in
// sluicectl_cmds so the tests can run it in-process.
#include "sluicectl/sluicectl.h"

#include <iostream>

int main(int argc, char **argv)
{
	return sluicectl_main(argc, argv, std::cout, std::cerr);
}
