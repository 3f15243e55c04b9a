#!/usr/bin/env bash
# build-trex.sh TARBALL: build Cisco TRex's server from its release source, once,
# into a versioned prefix outside the repository, and reuse it on later calls.
#
#   FWDBENCH_OPT (default /opt/fwdbench)  where prefixes and build trees live
#   result: $FWDBENCH_OPT/trex-<version>/ laid out as TRex's release package:
#           t-rex-64 (the server wrapper), _t-rex-64, so/, the Python client
#           under automation/trex_control_plane/interactive and its
#           external_libs/
#
# Only what fwdbench drives is built: the release, non-PIE server _t-rex-64
# (waf --targets; `./b build` alone builds four variants: debug and release,
# PIE and not). No Mellanox, no bnxt driver, no BIRD.
# Build facts for Debian 12 (../shared/trex/README.md): GCC 12 warns
# (dangling-pointer, maybe-uninitialized) where TRex's gcc_flags hold -Werror;
# CXXFLAGS cannot override it (TRex puts its own flags last), so -Werror is
# taken out of linux_dpdk/ws_main.py in the extracted copy, nowhere else.
set -euo pipefail

tarball=${1:?usage: build-trex.sh TREX_SOURCE_TARBALL}
[ -f "$tarball" ] || { echo "build-trex: $tarball: no such file (TREX_SRC must name TRex's source tarball)" >&2; exit 2; }
opt=${FWDBENCH_OPT:-/opt/fwdbench}
target=_t-rex-64

top=$(tar tJf "$tarball" | awk -F/ 'NR == 1 { print $1 }')
raw=$(tar xJOf "$tarball" "$top/VERSION" | head -1)             # v3.08
version=${raw#v}
case $version in
    ''|*[!0-9.]*) echo "build-trex: $tarball: VERSION reads '$raw', not vN.NN (is it TRex's source?)" >&2; exit 2 ;;
esac
prefix="$opt/trex-$version"
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
stamp="$prefix/.fwdbench-build"

mkdir -p "$opt"
exec 9>"$opt/.trex-$version.lock"
flock 9                                    # two make runs never build at once

if [ -f "$stamp" ] && grep -qx "sha256=$sum" "$stamp" && grep -qx "targets=$target" "$stamp" \
   && [ -x "$prefix/$target" ]; then
    echo "TRex $version already built in $prefix"
    exit 0
fi

src="$opt/build/trex-$version-src"
log="$opt/build/trex-$version-build.log"
echo "building TRex $version from $tarball into $prefix (once; 7-25 min on 2 cores)"
# the source and build trees are kept, so a rerun after a failure continues
# where waf stopped; another tarball starts from scratch
if ! [ -f "$src/.sha256" ] || [ "$(cat "$src/.sha256")" != "$sum" ]; then
    rm -rf "$src"
    mkdir -p "$opt/build"
    tar xJf "$tarball" -C "$opt/build"
    rm -rf "$src"
    mv "$opt/build/$top" "$src"
    # -Werror out of gcc_flags only (the one list it is in); fail loudly if
    # another TRex version has moved it
    /usr/bin/python3 - "$src/linux_dpdk/ws_main.py" <<'EOF'
import re, sys
path = sys.argv[1]
text = open(path).read()
new, n = re.subn(r"(gcc_flags = \[[^\]]*?)\s*'-Werror',", r"\1", text, count=1)
if n != 1:
    sys.exit(f"build-trex: {path}: no '-Werror' in gcc_flags (another TRex version? adjust scripts/build-trex.sh)")
open(path, "w").write(new)
EOF
    echo "$sum" > "$src/.sha256"
fi
rm -rf "$prefix"

# /usr/bin first: waf and TRex's scripts run `python3` from PATH
export PATH=/usr/bin:$PATH   # (not PYTHON3: linux_dpdk/b then leaves its interpreter unset)
(
    cd "$src/linux_dpdk"
    [ -f build_dpdk/c4che/_cache.py ] || ./b configure --no-mlx=all --no-bnxt
    ./b build --no-old --targets="$target"
) > "$log" 2>&1 || { tail -40 "$log" >&2; echo "build-trex: failed; the whole log is $log" >&2; exit 1; }

# install: TRex's scripts/ folder is its release package (the server wrapper
# runs from its own folder); -L turns the build's links into files
tmp="$prefix.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
cp -a "$src/scripts/." "$tmp/"
for f in "$target" so/x86_64/libbpf-64.so; do          # links into the build tree
    cp --remove-destination -L "$src/scripts/$f" "$tmp/$f"
done
strip "$tmp/$target"                       # as TRex's release package has it
find "$tmp" -xtype l -delete               # links to what was not built (BIRD, variants)
[ -x "$tmp/$target" ] || { echo "build-trex: $target was not built (see $log)" >&2; exit 1; }
mv "$tmp" "$prefix"

printf 'version=%s\nsource=%s\nsha256=%s\ntargets=%s\n' "$raw" "$(basename "$tarball")" "$sum" "$target" > "$stamp"
echo "TRex $version installed in $prefix"
