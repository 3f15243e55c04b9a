#!/usr/bin/env bash
# dpdk-driver-headers.sh DIR: give VPP's dpdk plugin the installed DPDK's driver
# SDK headers, which Debian's libdpdk-dev leaves out.
#
#   result: DIR/include/{bus_pci_driver.h,...}  and  DIR/pkgconfig/libdpdk.pc
#
# VPP's dpdk plugin includes <bus_pci_driver.h> and <bus_vmbus_driver.h>
# (struct rte_pci_device is driver-internal since DPDK 22.11); DPDK installs
# them only when built with -Denable_driver_sdk=true, and Debian 12 does not.
# They are taken from Debian's own source package of the installed
# libdpdk-dev (same version, so the structs match the shared libraries),
# fetched with apt from the archive that ships that version, through a
# private sources list and state, so the machine's apt setup is not changed.
# DIR/pkgconfig/libdpdk.pc is the system libdpdk.pc plus -I DIR/include: cmake's
# pkg_check_modules(libdpdk) with PKG_CONFIG_PATH=DIR/pkgconfig then adds the
# headers to the dpdk plugin only.
set -euo pipefail

dir=${1:?usage: dpdk-driver-headers.sh DIR}
version=$(dpkg-query -W -f '${Version}' libdpdk-dev 2>/dev/null) \
  || { echo "dpdk-driver-headers: libdpdk-dev is not installed (apt-get install libdpdk-dev)" >&2; exit 2; }
if [ -f "$dir/.version" ] && [ "$(cat "$dir/.version")" = "$version" ]; then
    exit 0
fi
source_pkg=$(dpkg-query -W -f '${source:Package}' libdpdk-dev)
# "libdpdk-dev | 22.11.11-0+deb12u1 | http://... bookworm/main amd64 Packages"
archive=$(apt-cache madison libdpdk-dev | awk -F' [|] ' -v v="$version" '$2 == v { print $3; exit }')
[ -n "$archive" ] || { echo "dpdk-driver-headers: no apt archive offers libdpdk-dev $version (apt-get update, or upgrade libdpdk-dev)" >&2; exit 1; }
read -r uri suite_component _ <<<"$archive"
suite=${suite_component%%/*}; component=${suite_component#*/}

rm -rf "$dir"
mkdir -p "$dir/apt/lists/partial" "$dir/src" "$dir/include" "$dir/pkgconfig"
echo "deb-src $uri $suite $component" > "$dir/apt/sources.list"
apt=(apt-get -qq -o "Dir::Etc::SourceList=$dir/apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
     -o "Dir::State::Lists=$dir/apt/lists" -o "Dir::Cache=$dir/apt")
"${apt[@]}" update
(cd "$dir/src" && "${apt[@]}" source --download-only "$source_pkg=$version" 2>&1 | grep -v 'unsandboxed as root' >&2 || true)
orig=$(ls "$dir"/src/*.orig.tar.* 2>/dev/null | head -1)
[ -n "$orig" ] || { echo "dpdk-driver-headers: could not fetch the source of $source_pkg $version from $uri $suite" >&2; exit 1; }

# DPDK's driver_sdk_headers of the libraries and buses the plugin uses
headers=(drivers/bus/pci/bus_pci_driver.h drivers/bus/vmbus/bus_vmbus_driver.h
         drivers/bus/vdev/bus_vdev_driver.h lib/eal/include/bus_driver.h lib/eal/include/dev_driver.h
         lib/ethdev/ethdev_driver.h lib/ethdev/ethdev_pci.h lib/ethdev/ethdev_vdev.h)
top=$(tar tf "$orig" | awk -F/ 'NR == 1 { print $1 }')
tar xf "$orig" -C "$dir/src" "${headers[@]/#/$top/}"
for h in "${headers[@]}"; do cp "$dir/src/$top/$h" "$dir/include/"; done
rm -rf "$dir/src" "$dir/apt"

pc=$(pkg-config --variable=pcfiledir libdpdk)/libdpdk.pc
sed -E "s|^Cflags:(.*)$|Cflags:\1 -I$dir/include|" "$pc" > "$dir/pkgconfig/libdpdk.pc"
echo "$version" > "$dir/.version"
echo "DPDK $version driver SDK headers in $dir/include"
