// policy_file.h - the policy file (YAML, docs/policy.md) and netset files,
// read into logic/classes' Policy. All or nothing: the first thing wrong
// refuses the whole file with a named error, the file, line and column, and
// why; nothing is half-read.
//
// Every file is opened without blocking (O_NONBLOCK: a FIFO in its place
// never stalls the reader), must be a regular file, and is read whole up to
// kPolicyFileBytesMax. Netset files (one prefix a line, '#' comments, blank
// lines) are named from the policy file; a relative path is taken from the
// policy file's directory.
#pragma once

#include "base/address.h"
#include "base/result.h"
#include "logic/classes.h"

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

// Every refusal has one of these names (policy_error_name), which tests and
// operators can match on; the reason says the rest.
#define SLUICE_POLICY_ERROR_TABLE(X)                                                               \
	X(not_found)          /* the file (or a directory on its path) does not exist */             \
	X(unreadable)         /* open or read failed: permissions, I/O (errno in `code`) */          \
	X(symlink_loop)       /* too many symbolic links on the path (ELOOP) */                      \
	X(is_directory)       /* a directory where a file was named */                               \
	X(is_fifo)            /* a FIFO: refused, never read (it could block) */                     \
	X(not_regular)        /* a device or socket */                                               \
	X(too_large)          /* more than kPolicyFileBytesMax bytes */                              \
	X(bad_utf8)           /* not UTF-8, or a NUL byte */                                         \
	X(bad_yaml)           /* YAML syntax, as yaml-cpp reports it */                              \
	X(too_deep)           /* nested deeper than kPolicyDepthMax */                               \
	X(too_many_nodes)     /* more than kPolicyNodesMax nodes */                                  \
	X(alias)              /* a YAML alias (*name): write the value out */                        \
	X(not_one_document)   /* two documents in one file */                                        \
	X(wrong_type)         /* a map where a list belongs, a list where a value belongs, ... */    \
	X(unknown_key)        /* a key the format does not have */                                   \
	X(duplicate_key)      /* the same key twice in one map (so a class name twice) */            \
	X(missing_key)        /* a key the format requires */                                        \
	X(bad_version)        /* version is not 1 */                                                 \
	X(bad_name)           /* a class name outside [a-z0-9_-]{1,32} */                            \
	X(too_many_classes)   /* more than kMaxClasses, the default class included */                \
	X(bad_value)          /* a rate, burst, prefix length, action, ... outside its bound */      \
	X(bad_protocol)       /* not tcp, tcp-syn, udp, icmp, icmpv6 */                              \
	X(bad_port)           /* a port outside 0..65535, or a range whose first port is the larger */ \
	X(bad_rule)           /* a rule that matches every frame, or ports without tcp/udp */        \
	X(unknown_class)      /* a rule names a class the file does not define */                    \
	X(too_many_rules)     /* more than kMaxRules */                                              \
	X(bad_prefix)         /* not a CIDR prefix (host bits set, length too long, ...) */          \
	X(duplicate_prefix)   /* the same prefix twice in one list */                                \
	X(overlapping_prefix) /* a prefix inside another of the same list */                         \
	X(too_many_entries)   /* more prefixes of one family than the list's map holds */            \
	X(write_failed)       /* write_netset: the temporary file or the rename */

enum class PolicyError {
#define SLUICE_POLICY_ERROR_ENUMERATOR(sym) sym,
	SLUICE_POLICY_ERROR_TABLE(SLUICE_POLICY_ERROR_ENUMERATOR)
#undef SLUICE_POLICY_ERROR_ENUMERATOR
};
const char *policy_error_name(PolicyError e);

struct PolicyFileError {
	PolicyError error = PolicyError::bad_yaml;
	std::string file;
	uint32_t line = 0, column = 0; // from 1; 0: the file as a whole
	std::string reason;
	int code = 0;                  // errno, for the open and read errors

	// "policy.yaml:12:5: unknown_key: class 'dns' has no key 'rte'"
	std::string str() const;
	// As the project's Error: kind system for open and read errors (errno
	// kept), invalid for everything in a file's content (exit 2).
	Error as_error() const;
};

template <class T>
using PolicyResult = std::expected<T, PolicyFileError>;

// The policy file at `path`, and every netset it names. With `files`, the
// paths of the netsets it opened or tried to, in order, are appended there,
// on a refusal too (up to the one refused): what --policy-watch watches.
PolicyResult<Policy> read_policy(const std::string &path, std::vector<std::string> *files = nullptr);
// The same from text already read: `name` is what errors call the file and
// `dir` is where relative netset paths start. (The fuzz harness uses it.)
PolicyResult<Policy> parse_policy(std::string_view text, const std::string &name, const std::string &dir,
				  std::vector<std::string> *files = nullptr);
// read_policy with the project's Error.
Result<Policy> load_policy(const std::string &path, std::vector<std::string> *files = nullptr);

// A file's bytes, opened without blocking; a regular file of at most
// kPolicyFileBytesMax bytes, or the refusal.
PolicyResult<std::string> read_bounded_file(const std::string &path);

struct NetsetEntry {
	Cidr cidr;
	uint32_t line = 0, column = 0;
};
// A netset's prefixes. `v4_room` and `v6_room`: how many of each family the
// list can still take; the first prefix beyond them refuses the file there
// (too_many_entries), so a 10^6-line file is refused at its 65,537th prefix.
PolicyResult<std::vector<NetsetEntry>> parse_netset(std::string_view text, const std::string &name, size_t v4_room,
						    size_t v6_room);
PolicyResult<std::vector<NetsetEntry>> read_netset(const std::string &path, size_t v4_room, size_t v6_room);

// Writes `cidrs` as a netset (an optional '#' header, one prefix a line) to
// `path` atomically: a temporary file in the same directory, fsync, rename.
// A reader sees the old file or the new one, never a part.
Status write_netset(const std::string &path, const std::vector<Cidr> &cidrs, std::string_view header = {});

} // namespace sluice
