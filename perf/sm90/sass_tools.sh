#!/usr/bin/env bash
# Prints the folder that holds cuobjdump and nvdisasm for reading sm_90a SASS on the CPU
# (perf/sm90/sass_budget.py, the instruction-budget tests of the CUDA suite):
#
#   1. $UQ_SASS_TOOLS if set;
#   2. the CUDA toolkit's own bin folder (beside nvcc), or PATH, when both tools are there;
#   3. otherwise the two programs of Debian's nvidia-cuda-toolkit package (non-free, trixie:
#      CUDA 12.4, the first Debian release whose tools read sm_90a code; bookworm's 11.8 does
#      not), fetched with `apt-get download` through a sources file written into the cache
#      (the machine's apt configuration is neither read nor changed), unpacked with dpkg-deb
#      into ${UQ_CACHE:-~/.cache/uq}/sass-tools/<version>/bin. Nothing is installed; the .deb
#      is removed once the two programs are out. UQ_SASS_TOOLS_REFRESH=1 refreshes the index.
#
# The pip-installed CUDA 13 toolkit of the CPU machines has nvcc and ptxas but neither tool;
# the 12.4 tools read CUDA 13's sm_90a objects (their listing of the decode kernels is the same
# SASS the H200 runs: the ELF holds machine code, not PTX).
set -euo pipefail

say() { printf '\033[1m[uq]\033[0m %s\n' "$*" >&2; }
die() { printf '[uq] sass_tools: %s\n' "$*" >&2; exit 2; }

has_both() { [ -x "$1/cuobjdump" ] && [ -x "$1/nvdisasm" ]; }

if [ -n "${UQ_SASS_TOOLS:-}" ]; then
  has_both "$UQ_SASS_TOOLS" || die "UQ_SASS_TOOLS=$UQ_SASS_TOOLS holds no cuobjdump and nvdisasm"
  echo "$UQ_SASS_TOOLS"
  exit 0
fi
cands=(/usr/local/cuda/bin)
for tool in nvcc cuobjdump; do
  found=$(command -v "$tool" || true)
  [ -n "$found" ] && cands=("$(dirname "$found")" "${cands[@]}")
done
for cand in "${cands[@]}"; do
  if has_both "$cand"; then echo "$cand"; exit 0; fi
done

command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || die "no apt-get / dpkg-deb: install cuobjdump and nvdisasm (CUDA >= 12.0) and set UQ_SASS_TOOLS"
CACHE="${UQ_CACHE:-$HOME/.cache/uq}/sass-tools"
APT_DIR="$CACHE/apt"
LIST="$CACHE/debian-non-free.list"
PKG=nvidia-cuda-toolkit
SUITE=trixie
mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial"
APT_OPTS=(-o "Dir::Etc::sourcelist=$LIST" -o "Dir::Etc::SourceParts=/dev/null"
          -o "Dir::State::Lists=$APT_DIR/lists" -o "Dir::Cache=$APT_DIR/cache"
          -o "Dir::State::status=/dev/null" -o "Acquire::Languages=none" -o "APT::Architectures=amd64")

(
  flock 8
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg arch=amd64] http://deb.debian.org/debian $SUITE non-free" >"$LIST"
  if [ "${UQ_SASS_TOOLS_REFRESH:-0}" = 1 ] || ! compgen -G "$APT_DIR/lists/*_Packages*" >/dev/null; then
    say "updating the apt index of Debian $SUITE non-free (for $PKG's cuobjdump and nvdisasm)"
    apt-get -q "${APT_OPTS[@]}" update >"$CACHE/apt-update.log" 2>&1 || { cat "$CACHE/apt-update.log" >&2; die "apt-get update failed"; }
  fi
  # madison: "pkg | version | http://... trixie/non-free amd64 Packages"
  version=$(apt-cache "${APT_OPTS[@]}" madison "$PKG" 2>/dev/null \
              | awk -F' [|] ' -v s=" $SUITE/" 'index($3, s) { gsub(/ /, "", $2); print $2 }' | sort -V | tail -n 1)
  [ -n "$version" ] || die "no $PKG in Debian $SUITE non-free"
  dest="$CACHE/${version//[:~]/_}"
  if ! has_both "$dest/bin"; then
    say "downloading Debian package $PKG $version ($SUITE non-free) for cuobjdump and nvdisasm"
    rm -rf "$dest.tmp" && mkdir -p "$dest.tmp"
    (cd "$dest.tmp" && apt-get -q "${APT_OPTS[@]}" download "$PKG=$version") >"$CACHE/apt-download.log" 2>&1 \
      || { cat "$CACHE/apt-download.log" >&2; die "apt-get download $PKG=$version failed"; }
    deb=$(compgen -G "$dest.tmp/${PKG}_*.deb" | head -n 1)
    mkdir -p "$dest.tmp/x" "$dest.tmp/bin"
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dest.tmp/x" ./usr/bin/cuobjdump ./usr/bin/nvdisasm \
      || die "$PKG $version: no usr/bin/cuobjdump and usr/bin/nvdisasm in $deb"
    mv "$dest.tmp/x/usr/bin/cuobjdump" "$dest.tmp/x/usr/bin/nvdisasm" "$dest.tmp/bin/"
    # the package's licence beside the two programs (NVIDIA's terms: they are used here, not shipped)
    dpkg-deb --fsys-tarfile "$deb" | tar -x -O "./usr/share/doc/$PKG/copyright" >"$dest.tmp/copyright" 2>/dev/null || true
    rm -rf "$dest.tmp/x" "$deb" "$dest"
    mv "$dest.tmp" "$dest"
  fi
  has_both "$dest/bin" || die "$PKG $version has no usr/bin/cuobjdump and usr/bin/nvdisasm"
  echo "$dest/bin"
) 8>"$CACHE/.lock"
