#!/usr/bin/env bash
# Install every build and test dependency of sluice from Debian's packages.
# Idempotent: packages already present are not fetched again, so the other
# scripts call it unconditionally.
set -euo pipefail

packages=(
  # build
  cmake make g++ clang llvm pkg-config
  # the sanitized fuzz build (scripts/test.sh): libFuzzer and a clang whose
  # std::expected works with libstdc++ 12 (CMakeLists.txt)
  clang-16 libclang-rt-16-dev
  libbpf-dev libxdp-dev bpftool libelf-dev zlib1g-dev
  libboost-program-options-dev nlohmann-json3-dev libcpp-httplib-dev libsystemd-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev
  # run and test: namespaces, veth, traffic, lists
  iproute2 procps iputils-ping netsniff-ng xdp-tools nftables iptables curl python3 iperf3
  # packaging and deployment tests: cpack's .deb (dpkg-deb, dpkg-shlibdeps),
  # the unit file (systemd-analyze), man pages (groff), capability sets
  # (setpriv), the Kubernetes manifests (python3-yaml)
  dpkg-dev systemd groff-base util-linux python3-yaml
  # upstream mitigation (docs/upstream.md): the BGP speaker sluiced drives
  # (gobgpd and its CLI gobgp) and the router the netns tests announce to
  # (BIRD 2, birdc); the tests start their own, by pid, in namespaces
  gobgpd bird2
  # sluicectl capture (docs/architecture.md, "Capture"): libpcap compiles the
  # filter expression; tcpdump and tshark read the files back in the tests
  libpcap-dev tcpdump tshark
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup.sh: missing packages (${missing[*]}); run as root to install them" >&2
    exit 2
  fi
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# promtool, which checks and unit-tests deploy/prometheus's alerting rules
# (tests/packaging/test_dashboards.py): the binary alone, taken from Debian's
# prometheus package without installing it (installing it would start a
# Prometheus server); a static Go binary.
if [ "$(id -u)" -eq 0 ] && ! command -v promtool >/dev/null; then
  fetch=$(mktemp -d)
  trap 'rm -rf "$fetch"' EXIT
  echo "setup.sh: fetching promtool (Debian's prometheus package, unpacked, not installed)"
  if ! (cd "$fetch" && apt-get download prometheus >/dev/null 2>&1); then
    apt-get update -qq
    (cd "$fetch" && apt-get download prometheus >/dev/null)
  fi
  dpkg-deb -x "$fetch"/prometheus_*.deb "$fetch/root"
  install -m 0755 "$fetch/root/usr/bin/promtool" /usr/local/bin/promtool
  rm -rf "$fetch"
  trap - EXIT
fi

# The BPF filesystem: the daemon pins its links and maps there.
if [ "$(id -u)" -eq 0 ] && ! mountpoint -q /sys/fs/bpf; then
  mount -t bpf bpf /sys/fs/bpf
fi
