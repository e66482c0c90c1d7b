// temp_dir.h - a temporary directory for a test, removed with everything in
// it. A directory that cannot be made throws: a test must never fall back to
// a shared path it would then remove.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

class TempDir {
public:
	// Under /tmp, named "<prefix>.XXXXXX".
	explicit TempDir(const std::string &prefix = "sluice-test")
	{
		std::string tmpl = "/tmp/" + prefix + ".XXXXXX";
		if (!mkdtemp(tmpl.data()))
			throw std::runtime_error("mkdtemp " + tmpl + ": " + std::strerror(errno));
		path_ = tmpl;
	}
	~TempDir()
	{
		std::error_code ec;
		std::filesystem::remove_all(path_, ec);
	}
	TempDir(const TempDir &) = delete;
	TempDir &operator=(const TempDir &) = delete;

	const std::string &path() const { return path_; }
	// Write `content` to <dir>/<name>; its path.
	std::string file(const std::string &name, const std::string &content) const
	{
		std::string p = path_ + "/" + name;
		std::ofstream(p) << content;
		return p;
	}

private:
	std::string path_;
};
