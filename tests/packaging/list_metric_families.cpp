// sluice-metric-families: the metric families sluiced exports, from the one
// table that makes them (ctl/sluiced/metrics.cpp, sluice_families), for a
// snapshot of one interface: one line per family, its name, its type and the
// label names of its samples ("-" when the snapshot gives it none). What
// tests/packaging/test_dashboards.py checks the Grafana dashboard and the
// alerting rules against, so that neither names a metric sluiced does not
// export.
#include "sluiced/metrics.h"

#include <iostream>
#include <set>

int main()
{
	sluice::MetricsSnapshot snapshot;
	sluice::InterfaceMetrics eth0;
	eth0.iface = "eth0";
	eth0.admission_fraction = 1.0;
	eth0.standing_entries = 0;
	eth0.classes.push_back({"default", {}});
	eth0.has_policy = true;
	eth0.last_reload_success = true;
	snapshot.interfaces.push_back(eth0);
	for (const auto &family : sluice::sluice_families(snapshot)) {
		std::set<std::string> labels;
		for (const auto &sample : family.samples)
			for (const auto &[name, value] : sample.labels)
				labels.insert(name);
		std::cout << family.name << ' ' << family.type << ' ';
		if (labels.empty())
			std::cout << '-';
		for (bool first = true; const auto &name : labels) {
			std::cout << (first ? "" : ",") << name;
			first = false;
		}
		std::cout << '\n';
	}
	return 0;
}
