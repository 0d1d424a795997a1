#!/usr/bin/env bash
# bench/gpu/deps.sh - tprof's build dependencies for a GPU machine that has CUDA, CMake and a
# compiler but no package manager and no network (docs/GPU.md, "Checks on a GPU machine").
#
#   bench/gpu/deps.sh fetch DIR            on a Debian machine with apt: the .deb files into DIR
#   bench/gpu/deps.sh unpack DIR PREFIX    on the GPU machine: every .deb of DIR unpacked under
#                                          PREFIX (dpkg -x), and PREFIX/env.sh written
#   . PREFIX/env.sh                        then CMAKE_FLAGS holds what CMake needs to find them
#
# Nothing is installed into / : the packages land under PREFIX, their pkg-config files are
# rewritten to point there, and the programs CMake builds find the libraries through their
# RPATH (CMake links them by full path). A pkg-config wrapper is made only when the machine
# has none. bench/gpu/check.sh does the unpacking itself when given DEBS=DIR.
set -euo pipefail

# zlib (gzip traces), libyaml (configuration), jansson (tprof check), cmocka (unit tests),
# Chart.js (embedded in the HTML report at build time), pkgconf (CMake's pkg_check_modules).
# Each runtime library comes with its -dev package: the -dev one holds only the .so link.
PACKAGES="zlib1g zlib1g-dev libyaml-0-2 libyaml-dev libjansson4 libjansson-dev libcmocka0
          libcmocka-dev libjs-chart.js pkgconf pkgconf-bin libpkgconf3"

fetch() {
  local dir=$1
  mkdir -p "$dir"
  (cd "$dir" && apt-get download $PACKAGES)
  echo "bench/gpu/deps.sh: $(ls "$dir"/*.deb | wc -l) packages in $dir"
}

unpack() {
  local dir=$1 prefix
  mkdir -p "$2"
  prefix=$(cd "$2" && pwd)
  local debs=("$dir"/*.deb)
  [ -e "${debs[0]}" ] || { echo "bench/gpu/deps.sh: no .deb files in $dir" >&2; exit 1; }
  for deb in "${debs[@]}"; do dpkg -x "$deb" "$prefix"; done
  # some packages (bookworm's zlib1g) still ship /lib: merge it into /usr/lib, as a merged-/usr
  # system does, so that the -dev packages' relative .so links resolve
  if [ -d "$prefix/lib" ] && [ ! -L "$prefix/lib" ]; then
    mkdir -p "$prefix/usr/lib" && cp -a "$prefix/lib/." "$prefix/usr/lib/" && rm -rf "$prefix/lib"
  fi
  # and absolute links (zlib1g-dev's libz.so -> /lib/...) point into the prefix
  find "$prefix" -type l -lname '/*' | while read -r link; do
    ln -sfn "$prefix/usr$(readlink "$link" | sed 's|^/usr||')" "$link"
  done
  local lib=$prefix/usr/lib/x86_64-linux-gnu
  # Debian's .pc files name /usr (as prefix=/usr or in full): make them name the prefix.
  find "$prefix/usr" -name '*.pc' -path '*pkgconfig*' -exec sed -i "s|/usr|$prefix/usr|g" {} +
  local flags="-DCMAKE_PREFIX_PATH=$prefix/usr"
  if ! command -v pkg-config > /dev/null; then
    mkdir -p "$prefix/bin"
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$lib" "$prefix/usr/bin/pkgconf" \
      > "$prefix/bin/pkg-config"
    chmod +x "$prefix/bin/pkg-config"
    flags="$flags -DPKG_CONFIG_EXECUTABLE=$prefix/bin/pkg-config"
  fi
  {
    echo "export PKG_CONFIG_PATH=$lib/pkgconfig:$prefix/usr/share/pkgconfig\${PKG_CONFIG_PATH:+:\$PKG_CONFIG_PATH}"
    echo "export CMAKE_FLAGS=\"$flags \${CMAKE_FLAGS:-}\""
  } > "$prefix/env.sh"
  echo "bench/gpu/deps.sh: ${#debs[@]} packages under $prefix; . $prefix/env.sh"
}

case "${1:-}" in
  fetch) [ $# -eq 2 ] || { echo "usage: $0 fetch DIR" >&2; exit 2; }; fetch "$2" ;;
  unpack) [ $# -eq 3 ] || { echo "usage: $0 unpack DIR PREFIX" >&2; exit 2; }; unpack "$2" "$3" ;;
  *) echo "usage: $0 fetch DIR | unpack DIR PREFIX" >&2; exit 2 ;;
esac
