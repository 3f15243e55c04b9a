#!/usr/bin/env bash
# build-vpp.sh TARBALL: build FD.io VPP from its release source, once, into a
# versioned prefix outside the repository, and reuse it on later calls.
#
#   FWDBENCH_OPT (default /opt/fwdbench)  where prefixes and build trees live
#   result: $FWDBENCH_OPT/vpp-<version>/{bin/vpp,bin/vppctl,lib/...,share/vpp/api}
#
# Only what fwdbench drives is built: the VPP binary, vppctl, the API JSON and
# the plugins in VPP_PLUGINS below (no DPDK plugin, no drivers, no tests), so
# a fresh machine's first `make test` stays inside CI's time budget.
# Build facts for Debian 12 (../shared/vpp/README.md): vppapigen needs ply in
# the python3 that cmake finds; af_xdp must link the shared libbpf/libxdp
# (Debian's libbpf.a is not -fPIC); the ipsecmb engine does not compile
# against Debian 12's intel-ipsec-mb, so no crypto engine is built.
set -euo pipefail

tarball=${1:?usage: build-vpp.sh VPP_SOURCE_TARBALL}
[ -f "$tarball" ] || { echo "build-vpp: $tarball: no such file (VPP_SRC must name FD.io's release tarball)" >&2; exit 2; }
opt=${FWDBENCH_OPT:-/opt/fwdbench}
plugins=af_packet,af_xdp,memif,nat,ping,perfmon

top=$(tar tJf "$tarball" | awk -F/ 'NR == 1 { print $1 }')
raw=$(tar xJOf "$tarball" "$top/src/scripts/.version")          # v26.06-0-gc3200b88dc
version=${raw#v}; version=${version%%-*}                        # 26.06
prefix="$opt/vpp-$version"
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
stamp="$prefix/.fwdbench-build"

mkdir -p "$opt"
exec 9>"$opt/.vpp-$version.lock"
flock 9                                    # two make runs never build at once

if [ -f "$stamp" ] && grep -qx "sha256=$sum" "$stamp" && grep -qx "plugins=$plugins" "$stamp" \
   && [ -x "$prefix/bin/vpp" ]; then
    echo "VPP $version already built in $prefix"
    exit 0
fi

src="$opt/build/vpp-$version-src"
build="$opt/build/vpp-$version-build"
echo "building VPP $version from $tarball into $prefix (once; about 15-25 min on 2 cores)"
# the source and build trees are kept, so a changed plugin list rebuilds only
# what changed; another tarball starts from scratch
if ! [ -f "$src/.sha256" ] || [ "$(cat "$src/.sha256")" != "$sum" ]; then
    rm -rf "$src" "$build"
    mkdir -p "$opt/build"
    tar xJf "$tarball" -C "$opt/build"
    mv "$opt/build/$top" "$src"
    echo "$sum" > "$src/.sha256"
fi
rm -rf "$prefix"

lib=/usr/lib/$(gcc -print-multiarch)
# /usr/bin first: vppapigen runs `python3` from PATH and needs Debian's ply
export PATH=/usr/bin:$PATH
cmake -G Ninja -S "$src/src" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DPython3_EXECUTABLE=/usr/bin/python3 \
    -DVPP_PLUGINS="$plugins" \
    -DVPP_DRIVERS=none \
    -DVPP_CRYPTO_ENGINES=none \
    -DVPP_TESTS=none \
    -DXDP_LIB="$lib/libxdp.so" -DBPF_LIB="$lib/libbpf.so" \
    > "$opt/build/vpp-$version-cmake.log" 2>&1 \
  || { tail -30 "$opt/build/vpp-$version-cmake.log" >&2; exit 1; }
ninja -C "$build" install > "$opt/build/vpp-$version-ninja.log" 2>&1 \
  || { tail -40 "$opt/build/vpp-$version-ninja.log" >&2; exit 1; }

printf 'version=%s\nsource=%s\nsha256=%s\nplugins=%s\n' "$raw" "$(basename "$tarball")" "$sum" "$plugins" > "$stamp"
echo "VPP $version installed in $prefix"
