#include "sluicectl/table.h"

#include <algorithm>

namespace sluicectl {

Table::Table(std::vector<std::string> header, std::vector<Align> align)
	: header_(std::move(header)), align_(std::move(align))
{
}

Table &Table::row(std::vector<std::string> cells)
{
	rows_.push_back(std::move(cells));
	return *this;
}

void Table::print(std::ostream &out, size_t indent) const
{
	std::vector<std::vector<std::string>> lines;
	if (!header_.empty())
		lines.push_back(header_);
	lines.insert(lines.end(), rows_.begin(), rows_.end());

	std::vector<size_t> width;
	for (const auto &line : lines) {
		width.resize(std::max(width.size(), line.size()));
		for (size_t c = 0; c < line.size(); c++)
			width[c] = std::max(width[c], line[c].size());
	}

	for (const auto &line : lines) {
		std::string text(indent, ' ');
		for (size_t c = 0; c < line.size(); c++) {
			bool right = c < align_.size() && align_[c] == Align::right;
			std::string pad(width[c] - line[c].size(), ' ');
			if (c > 0)
				text += "  ";
			text += right ? pad + line[c] : line[c] + pad;
		}
		// Left-aligned last columns leave padding behind: no trailing blanks.
		text.erase(text.find_last_not_of(' ') + 1);
		out << text << '\n';
	}
}

} // namespace sluicectl
