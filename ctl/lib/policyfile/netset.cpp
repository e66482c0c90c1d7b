// netset.cpp - reading files without blocking, netset files, and writing the
// running lists back (write_netset).
#include "policyfile/policy_file.h"

#include "base/address.h"
#include "base/fd.h"
#include "base/limits.h"
#include "bpf/sluice_abi.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sluice {

const char *policy_error_name(PolicyError e)
{
	switch (e) {
#define SLUICE_POLICY_ERROR_NAME(sym)                                                                  \
	case PolicyError::sym:                                                                         \
		return #sym;
		SLUICE_POLICY_ERROR_TABLE(SLUICE_POLICY_ERROR_NAME)
#undef SLUICE_POLICY_ERROR_NAME
	}
	return "?";
}

std::string PolicyFileError::str() const
{
	std::string s = file;
	if (line)
		s += ":" + std::to_string(line) + ":" + std::to_string(column);
	s += std::string(": ") + policy_error_name(error) + ": " + reason;
	if (code)
		s += std::string(": ") + std::strerror(code) + " (errno " + std::to_string(code) + ")";
	return s;
}

Error PolicyFileError::as_error() const
{
	std::string message = file;
	if (line)
		message += ":" + std::to_string(line) + ":" + std::to_string(column);
	message += std::string(": ") + policy_error_name(error) + ": " + reason;
	if (code)
		return Error{ErrorKind::system, code, message};
	return Error{ErrorKind::invalid, 0, message};
}

namespace {

std::unexpected<PolicyFileError> refuse(PolicyError e, const std::string &file, std::string reason, int code = 0)
{
	return std::unexpected(PolicyFileError{e, file, 0, 0, std::move(reason), code});
}

} // namespace

PolicyResult<std::string> read_bounded_file(const std::string &path)
{
	// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
	// writer; with it the open returns at once and fstat refuses the FIFO.
	int raw = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (raw < 0) {
		int err = errno;
		switch (err) {
		case ENOENT:
		case ENOTDIR:
			return refuse(PolicyError::not_found, path, "cannot open it", err);
		case ELOOP:
			return refuse(PolicyError::symlink_loop, path, "cannot open it: a loop of symbolic links", err);
		default:
			return refuse(PolicyError::unreadable, path, "cannot open it", err);
		}
	}
	UniqueFd fd(raw);
	struct stat st {};
	if (fstat(fd.get(), &st) != 0)
		return refuse(PolicyError::unreadable, path, "cannot stat it", errno);
	if (S_ISDIR(st.st_mode))
		return refuse(PolicyError::is_directory, path, "is a directory, not a file");
	if (S_ISFIFO(st.st_mode))
		return refuse(PolicyError::is_fifo, path, "is a FIFO, not a file (never read: it could block)");
	if (!S_ISREG(st.st_mode))
		return refuse(PolicyError::not_regular, path, "is not a regular file (a device or a socket)");
	if (auto ok = check_file_bytes(st.st_size); !ok)
		return refuse(PolicyError::too_large, path, ok.error().message);
	std::string text;
	text.resize(size_t(st.st_size) + 1); // one more: a file that grew is noticed
	size_t got = 0;
	for (;;) {
		if (got == text.size()) {
			if (auto ok = check_file_bytes(got); !ok)
				return refuse(PolicyError::too_large, path, ok.error().message);
			text.resize(std::min<size_t>(text.size() * 2 + 4096, kPolicyFileBytesMax + 1));
		}
		ssize_t n = read(fd.get(), text.data() + got, text.size() - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return refuse(PolicyError::unreadable, path, "cannot read it", errno);
		if (n == 0)
			break;
		got += size_t(n);
	}
	text.resize(got);
	return text;
}

PolicyResult<std::vector<NetsetEntry>> parse_netset(std::string_view text, const std::string &name, size_t v4_room,
						    size_t v6_room)
{
	std::vector<NetsetEntry> out;
	size_t v4 = 0, v6 = 0;
	ContentLines lines(text);
	while (auto line = lines.next()) {
		uint32_t number = uint32_t(line->number), column = uint32_t(line->column);
		std::string_view word = line->text;
		auto at = [&](PolicyError e, std::string reason) {
			return std::unexpected(PolicyFileError{e, name, number, column, std::move(reason), 0});
		};
		auto c = parse_cidr(word);
		if (!c)
			return at(PolicyError::bad_prefix, c.error().message);
		size_t &count = c->addr.family == Family::v4 ? v4 : v6;
		size_t room = c->addr.family == Family::v4 ? v4_room : v6_room;
		if (++count > room)
			return at(PolicyError::too_many_entries,
				  std::string("more IPv") + (c->addr.family == Family::v4 ? "4" : "6") +
					  " prefixes than the list holds (" + std::to_string(SLUICE_LIST_MAX_ENTRIES) +
					  " a family, this file's included)");
		out.push_back(NetsetEntry{*c, number, column});
	}
	return out;
}

PolicyResult<std::vector<NetsetEntry>> read_netset(const std::string &path, size_t v4_room, size_t v6_room)
{
	auto text = read_bounded_file(path);
	if (!text)
		return std::unexpected(std::move(text.error()));
	return parse_netset(*text, path, v4_room, v6_room);
}

Status write_netset(const std::string &path, const std::vector<Cidr> &cidrs, std::string_view header)
{
	std::string text;
	if (!header.empty()) {
		std::string_view h = header;
		while (!h.empty()) {
			size_t eol = h.find('\n');
			text += "# " + std::string(h.substr(0, eol)) + "\n";
			h = eol == std::string_view::npos ? std::string_view{} : h.substr(eol + 1);
		}
	}
	for (const auto &c : cidrs)
		text += c.str() + "\n";

	std::string tmpl = path + ".XXXXXX";
	int raw = mkostemp(tmpl.data(), O_CLOEXEC);
	if (raw < 0)
		return fail_errno("cannot create a temporary file beside " + path + " (" + tmpl + ")");
	UniqueFd fd(raw);
	auto give_up = [&](const std::string &what) {
		int err = errno;
		unlink(tmpl.c_str());
		return fail(ErrorKind::system, what + " " + tmpl + " (for " + path + ")", err);
	};
	for (size_t done = 0; done < text.size();) {
		ssize_t n = write(fd.get(), text.data() + done, text.size() - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return give_up("cannot write");
		done += size_t(n);
	}
	// 0644 like any configuration file (mkostemp makes it 0600).
	if (fchmod(fd.get(), 0644) != 0)
		return give_up("cannot chmod");
	if (fsync(fd.get()) != 0)
		return give_up("cannot fsync");
	if (rename(tmpl.c_str(), path.c_str()) != 0)
		return give_up("cannot rename into place");
	return {};
}

} // namespace sluice
