// table.h - an aligned text table: column widths from the widest cell.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace sluicectl {

class Table {
public:
	enum class Align { left, right };

	// An empty header prints no header row (a key/value block, say).
	// Columns without an alignment given are left-aligned.
	explicit Table(std::vector<std::string> header = {}, std::vector<Align> align = {});

	Table &row(std::vector<std::string> cells);
	// Every line starts with `indent` spaces; columns are two spaces apart.
	void print(std::ostream &out, size_t indent = 0) const;

private:
	std::vector<std::string> header_;
	std::vector<Align> align_;
	std::vector<std::vector<std::string>> rows_;
};

} // namespace sluicectl
