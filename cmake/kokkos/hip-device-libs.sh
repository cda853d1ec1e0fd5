# Sourced by build-kokkos.sh for the hip variant: the gfx950 device libraries, from two
# Debian packages fetched with `apt-get download` through rocm-device-libs.list (apt's
# lists and archives kept in the cache, the machine's apt configuration left alone) and
# unpacked with `dpkg-deb -x` into the Kokkos install prefix. Nothing is installed.
#
#   rocm-device-libs-21 (sid)   ocml, ockl and oclc_* bitcode, with oclc_isa_version_950.bc
#                               (Debian 12's own device libraries stop at gfx940)
#   rocm-device-libs (bookworm) only its hip.bc: Debian 12's HIP 5.2 headers call
#                               __atomic_work_item_fence (from __threadfence), which the
#                               ROCm 7 libraries no longer define; clang-22 links no hip.bc
#                               by itself, so the list of libraries is passed explicitly.
#
# Uses from build-kokkos.sh: HERE CACHE say die flock; UQ_KOKKOS_REFRESH.

DEVICE_LIBS_LIST="$HERE/rocm-device-libs.list"
DEVICE_LIBS_CACHE="$CACHE/rocm-device-libs"
DL_APT_DIR="$DEVICE_LIBS_CACHE/apt"
DL_APT_OPTS=(-o "Dir::Etc::sourcelist=$DEVICE_LIBS_LIST" -o "Dir::Etc::SourceParts=/dev/null"
             -o "Dir::State::Lists=$DL_APT_DIR/lists" -o "Dir::Cache=$DL_APT_DIR/cache"
             -o "Dir::State::status=/dev/null" -o "Acquire::Languages=none"
             -o "APT::Architectures=amd64")
# package and the suite it must come from (the same name may appear in other suites later)
DEVICE_LIB_PKGS=("rocm-device-libs-21 sid" "rocm-device-libs bookworm")
# where the bitcode goes, relative to the install prefix
HIP_BITCODE_DIR=lib/amdgcn/bitcode
# the name bookworm's hip.bc gets there (sid's package has a hip.bc of its own)
HIP52_BITCODE=hip-rocm-5.2.bc

# Prints "<package> <version> <suite>" per device-library package, the newest version of
# each package in its suite (the index is fetched when absent, or with UQ_KOKKOS_REFRESH=1).
device_lib_versions() {
  mkdir -p "$DEVICE_LIBS_CACHE"
  (
    flock 8
    if [ "${UQ_KOKKOS_REFRESH:-0}" = 1 ] || ! compgen -G "$DL_APT_DIR/lists/*_Packages*" >/dev/null; then
      say "updating the apt index for $DEVICE_LIBS_LIST"
      mkdir -p "$DL_APT_DIR/lists/partial" "$DL_APT_DIR/cache/archives/partial"
      local log="$DEVICE_LIBS_CACHE/apt-update.log"
      if ! apt-get -q "${DL_APT_OPTS[@]}" update >"$log" 2>&1; then
        cat "$log" >&2
        die "apt-get update with $DEVICE_LIBS_LIST failed (log above)"
      fi
    fi
    local entry pkg suite version
    for entry in "${DEVICE_LIB_PKGS[@]}"; do
      read -r pkg suite <<<"$entry"
      # madison: "pkg | version | http://... <suite>/main amd64 Packages"
      version=$(apt-cache "${DL_APT_OPTS[@]}" madison "$pkg" 2>/dev/null \
                  | awk -F' [|] ' -v s=" $suite/" 'index($3, s) { gsub(/ /, "", $2); print $2 }' \
                  | sort -V | tail -n 1)
      [ -n "$version" ] || die "no package $pkg in $suite in the index of $DEVICE_LIBS_LIST"
      echo "$pkg $version $suite"
    done
  ) 8>"$DEVICE_LIBS_CACHE/.lock"
}

# The identity lines that go into the install's hash and stamp.
device_lib_identity() { printf '%s\n' "$DEVICE_LIBS"; }

# Downloads the .debs named by $DEVICE_LIBS into the cache (apt checks each against the
# signed index). Returns 1 when a version is no longer served.
fetch_device_libs() {
  local dir="$DEVICE_LIBS_CACHE/debs"
  mkdir -p "$dir"
  (
    flock 8
    local pkg version suite
    while read -r pkg version suite; do
      compgen -G "$dir/${pkg}_${version//:/%3a}_*.deb" >/dev/null && continue
      say "downloading Debian package $pkg $version ($suite)"
      if ! (cd "$dir" && apt-get -q "${DL_APT_OPTS[@]}" download "$pkg=$version") \
             >"$DEVICE_LIBS_CACHE/apt-download.log" 2>&1; then
        cat "$DEVICE_LIBS_CACHE/apt-download.log" >&2
        exit 1
      fi
    done <<<"$DEVICE_LIBS"
  ) 8>"$DEVICE_LIBS_CACHE/.lock"
}

# Unpacks the downloaded .debs and assembles the bitcode folder $1.
install_device_libs() {
  local dest="$1" tmp="$1.unpack" pkg version suite deb
  rm -rf "$tmp" && mkdir -p "$tmp" "$dest"
  while read -r pkg version suite; do
    deb=$(compgen -G "$DEVICE_LIBS_CACHE/debs/${pkg}_${version//:/%3a}_*.deb" | head -n 1)
    [ -n "$deb" ] || die "$pkg $version was not downloaded"
    dpkg-deb -x "$deb" "$tmp/$pkg"
  done <<<"$DEVICE_LIBS"
  local sid_bitcode bookworm_hip
  sid_bitcode=$(find "$tmp/rocm-device-libs-21" -type d -path '*/amdgcn/bitcode' | head -n 1)
  bookworm_hip=$(find "$tmp/rocm-device-libs" -type f -path '*/amdgcn/bitcode/hip.bc' | head -n 1)
  [ -n "$sid_bitcode" ] || die "rocm-device-libs-21 has no amdgcn/bitcode folder"
  [ -n "$bookworm_hip" ] || die "rocm-device-libs (bookworm) has no amdgcn/bitcode/hip.bc"
  cp "$sid_bitcode"/*.bc "$dest/"
  cp "$bookworm_hip" "$dest/$HIP52_BITCODE"
  local lib
  for lib in $(hip_device_libs); do
    [ -f "$dest/$lib" ] || die "device library $lib is missing from $dest (did a package change?)"
  done
  mkdir -p "$dest/copyright"
  for pkg in rocm-device-libs-21 rocm-device-libs; do
    cp "$tmp/$pkg/usr/share/doc/$pkg/copyright" "$dest/copyright/$pkg" 2>/dev/null || true
  done
  rm -rf "$tmp"
  say "device libraries for gfx950 in $dest ($(ls "$dest"/*.bc | wc -l) bitcode files)"
}

# The device libraries every HIP translation unit links, in clang's order: clang-22's own
# choice for gfx950 with the default floating-point options (what `clang++-22 -### -x hip
# --offload-arch=gfx950 --rocm-device-lib-path=...` prints), plus bookworm's hip.bc first.
# --hip-device-lib replaces clang's choice, so an option that changes it (-ffast-math:
# oclc_unsafe_math_on, -fgpu-flush-denormals-to-zero: oclc_daz_opt_on) is not followed.
hip_device_libs() {
  echo "$HIP52_BITCODE" ocml.bc ockl.bc oclc_unsafe_math_off.bc oclc_finite_only_off.bc \
       oclc_correctly_rounded_sqrt_on.bc oclc_wavefrontsize64_on.bc oclc_isa_version_950.bc \
       oclc_abi_version_600.bc
}

# Options for every HIP compile with this toolchain, one per line (Kokkos_HIP_OPTIONS).
hip_compile_options() {
  local dir="$1" lib
  echo "-D__AMDGCN_WAVEFRONT_SIZE=64"  # HIP 5.2's warpSize; clang 22 no longer defines it
  echo "--hip-device-lib-path=$dir"
  for lib in $(hip_device_libs); do echo "--hip-device-lib=$lib"; done
}
