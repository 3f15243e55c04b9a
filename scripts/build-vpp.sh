#!/usr/bin/env bash
# build-vpp.sh TARBALL: build FD.io VPP from its release source, once, into a
# versioned prefix outside the repository, and reuse it on later calls.
#
#   FWDBENCH_OPT (default /opt/fwdbench)  where prefixes and build trees live
#   result: $FWDBENCH_OPT/vpp-<version>/{bin/vpp,bin/vppctl,lib/...,share/vpp/api}
#
# Only what fwdbench drives is built: the VPP binary, vppctl, the API JSON and
# the plugins in VPP_PLUGINS below (no drivers, no tests), so a fresh machine's
# first `make test` stays inside CI's time budget.
# The dpdk plugin links Debian's DPDK (22.11, libdpdk-dev) instead of the DPDK
# VPP's own build downloads: VPP_USE_SYSTEM_DPDK, plus the driver SDK headers
# Debian leaves out (scripts/dpdk-driver-headers.sh). Its DPDK crypto part
# (cryptodev/) needs DPDK 23.03's cryptodev string API, so OpenSSL, which only
# switches that part and plugins we do not build on, is not looked for.
# Build facts for Debian 12 (../shared/vpp/README.md): vppapigen needs ply in
# the python3 that cmake finds; af_xdp must link the shared libbpf/libxdp
# (Debian's libbpf.a is not -fPIC); the ipsecmb engine does not compile
# against Debian 12's intel-ipsec-mb, so no crypto engine is built.
set -euo pipefail

tarball=${1:?usage: build-vpp.sh VPP_SOURCE_TARBALL}
[ -f "$tarball" ] || { echo "build-vpp: $tarball: no such file (VPP_SRC must name FD.io's release tarball)" >&2; exit 2; }
opt=${FWDBENCH_OPT:-/opt/fwdbench}
plugins=af_packet,af_xdp,dpdk,memif,nat,ping,perfmon
here=$(cd "$(dirname "$0")" && pwd)

top=$(tar tJf "$tarball" | awk -F/ 'NR == 1 { print $1 }')
raw=$(tar xJOf "$tarball" "$top/src/scripts/.version")          # v26.06-0-gc3200b88dc
version=${raw#v}; version=${version%%-*}                        # 26.06
prefix="$opt/vpp-$version"
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
stamp="$prefix/.fwdbench-build"

mkdir -p "$opt"
exec 9>"$opt/.vpp-$version.lock"
flock 9                                    # two make runs never build at once

lib=/usr/lib/$(gcc -print-multiarch)
missing_plugins() {      # the plugins of $plugins that the prefix lacks
    local p
    for p in ${plugins//,/ }; do
        [ -f "$prefix/lib/$(gcc -print-multiarch)/vpp_plugins/${p}_plugin.so" ] || echo "$p"
    done
}
same_source=false
[ -f "$stamp" ] && grep -qx "sha256=$sum" "$stamp" && [ -x "$prefix/bin/vpp" ] && same_source=true
if $same_source && [ -z "$(missing_plugins)" ]; then
    echo "VPP $version already built in $prefix"
    exit 0
fi

src="$opt/build/vpp-$version-src"
build="$opt/build/vpp-$version-build"
# the source and build trees are kept, so a changed plugin list rebuilds only
# what changed; another tarball starts from scratch
if ! [ -f "$src/.sha256" ] || [ "$(cat "$src/.sha256")" != "$sum" ]; then
    same_source=false
    rm -rf "$src" "$build"
    mkdir -p "$opt/build"
    tar xJf "$tarball" -C "$opt/build"
    mv "$opt/build/$top" "$src"
    echo "$sum" > "$src/.sha256"
fi
[ -f "$build/build.ninja" ] || same_source=false

"$here/dpdk-driver-headers.sh" "$opt/build/dpdk-driver-headers"
# /usr/bin first: vppapigen runs `python3` from PATH and needs Debian's ply
export PATH=/usr/bin:$PATH
PKG_CONFIG_PATH="$opt/build/dpdk-driver-headers/pkgconfig" \
cmake -G Ninja -S "$src/src" -B "$build" -U __pkg_config_checked_DPDK \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DPython3_EXECUTABLE=/usr/bin/python3 \
    -DVPP_PLUGINS="$plugins" \
    -DVPP_USE_SYSTEM_DPDK=ON -DCMAKE_DISABLE_FIND_PACKAGE_OpenSSL=ON \
    -DVPP_DRIVERS=none \
    -DVPP_CRYPTO_ENGINES=none \
    -DVPP_TESTS=none \
    -DXDP_LIB="$lib/libxdp.so" -DBPF_LIB="$lib/libbpf.so" \
    > "$opt/build/vpp-$version-cmake.log" 2>&1 \
  || { tail -30 "$opt/build/vpp-$version-cmake.log" >&2; exit 1; }
if $same_source; then
    # a prefix of this source lacking plugins (one built before dpdk was added):
    # build and install only those, into the prefix as it is (VPPs may be
    # running from it); VPP's ninja regenerates some API headers on every run,
    # so a full `ninja install` here would relink and reinstall VPP's libraries
    missing=($(missing_plugins))
    echo "adding plugin(s) ${missing[*]} to VPP $version in $prefix"
    add_plugins() {
        ninja -C "$build" "${missing[@]/%/_plugin}" || return 1
        local p
        for p in "${missing[@]}"; do cmake -P "$build/CMakeFiles/plugins/$p/cmake_install.cmake" || return 1; done
    }
    add_plugins > "$opt/build/vpp-$version-ninja.log" 2>&1 \
      || { tail -40 "$opt/build/vpp-$version-ninja.log" >&2; exit 1; }
else
    echo "building VPP $version from $tarball into $prefix (once; about 15-25 min on 2 cores)"
    rm -rf "$prefix"
    ninja -C "$build" install > "$opt/build/vpp-$version-ninja.log" 2>&1 \
      || { tail -40 "$opt/build/vpp-$version-ninja.log" >&2; exit 1; }
fi

printf 'version=%s\nsource=%s\nsha256=%s\nplugins=%s\n' "$raw" "$(basename "$tarball")" "$sum" "$plugins" > "$stamp"
echo "VPP $version installed in $prefix"
