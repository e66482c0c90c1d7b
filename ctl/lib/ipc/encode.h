// encode.h - the one place the daemon's typed replies (replies.h) become
// JSON: the reply bodies protocol.h documents, without "ok" (ok_reply adds
// it). sluicectl's status from pins goes through here too, so the daemon's
// and the pins' status look alike.
#pragma once

#include "ipc/protocol.h"
#include "ipc/replies.h"

namespace sluice {

json encode(const CounterSet &counters); // {<outcome>: {packets, bytes}}
json encode(const std::optional<RateSet> &rates); // {<outcome>: {pps, bps}}; {} when none
json encode(const InterfaceStatus &s);
json encode(const ManagedStatus &s);
json encode(const DaemonInfo &d);
json encode(const StatusReply &r);
json encode(const PinsStatusReply &r);
json encode(const InterfaceStats &s);
json encode(const StatsReply &r);
json encode(const BreakerMove &m);
json encode(const RuleView &r);
json encode(const BreakerStep &b);
json encode(const PolicySet &p);
json encode(const BucketView &b);
json encode(const StandingStatus &s);
json encode(const CookieStatus &c);
json encode(const StandingView &v);
json encode(const RevocationEvent &e);
json encode(const StandingRevokeReply &r);
json encode(const RekeyResult &r);
json encode(const ListChange &c);
json encode(const ListShow &s);
json encode(const UpstreamView &v);
json encode(const UpstreamListChange &c);
json encode(const AuditResult &a);
json encode(const TopView &t);
json encode(const AttachResult &a);
json encode(const DetachResult &d);
json encode(const PolicyStatus &p);
json encode(const PolicyApplied &a);
json encode(const ReloadReply &r);
json encode(const ExplainView &e);
json encode(const ClassView &c);
json encode(const ClassList &l);
json encode(const ClassCounters &c);

} // namespace sluice
