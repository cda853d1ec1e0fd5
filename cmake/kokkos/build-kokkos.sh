#!/usr/bin/env bash
# Builds Kokkos for one variant (serial, openmp, cuda, hip) from Debian 12's own source package (trilinos,
# whose packages/kokkos is Kokkos 3.4.01), with the patches in patches/, and installs it
# into ${UQ_CACHE:-~/.cache/uq}/kokkos-<variant>-<hash>.
#
#   cmake/kokkos/build-kokkos.sh openmp    OpenMP + Serial, g++
#   cmake/kokkos/build-kokkos.sh cuda      CUDA (sm_90, lambdas) + OpenMP, nvcc_wrapper
#   cmake/kokkos/build-kokkos.sh hip       HIP (gfx950) + Serial, clang++-22 and Debian's HIP
#                                          5.2, for compiling and linking only (see README.md)
#
# stdout carries exactly one line, the install prefix (for -DKokkos_ROOT=...); all progress
# goes to stderr. The hash covers this script, the apt sources file, the patches, the source
# package's version, the compilers' versions (and, for hip, the device-library packages'): an unchanged set of inputs reuses the install
# (a quick no-op), a changed one builds a new prefix next to the old one. Builds of the same
# prefix are serialised with flock, and a prefix counts as installed only once its stamp file
# (uq-kokkos.txt) is written, last, so an interrupted build is redone, never half-used.
#
# Environment: UQ_CACHE (cache root), UQ_JOBS (parallel jobs, default nproc), CUDA_ROOT (CUDA
# toolkit; default: nvcc on PATH, else /usr/local/cuda), UQ_KOKKOS_VERBOSE=1 (stream the build
# log to stderr), UQ_KOKKOS_REFRESH=1 (refresh the apt source index before choosing a version).
set -euo pipefail

exec 3>&1 1>&2  # fd 3 is the real stdout, kept for the prefix alone

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SELF="$HERE/$(basename "${BASH_SOURCE[0]}")"
SOURCES_LIST="$HERE/debian-sources.list"
PATCH_DIR="$HERE/patches"
CACHE="${UQ_CACHE:-${HOME:?set UQ_CACHE (or HOME)}/.cache/uq}"
SRC_CACHE="$CACHE/kokkos-src"
JOBS="${UQ_JOBS:-$(nproc)}"
SOURCE_PACKAGE=trilinos
STAMP_NAME=uq-kokkos.txt

say() { printf '[build-kokkos] %s\n' "$*" >&2; }
die() { printf '[build-kokkos] error: %s\n' "$*" >&2; exit 1; }

usage() { die "usage: $0 openmp|cuda|hip   (prints the Kokkos install prefix on stdout)"; }

VARIANT="${1:-}"
case "$VARIANT" in
  openmp|cuda|hip) ;;
  *) usage ;;
esac
[ $# -eq 1 ] || usage

# ---------------------------------------------------------------- Debian packages
# Tools the build needs; the CUDA toolkit is not a Debian package and is checked separately.
NEEDED_PKGS=(cmake make g++ patch tar gzip xz-utils util-linux debian-archive-keyring)
# hip: the compiler, its device linker and Debian's HIP runtime (headers, libamdhip64).
HIP_PKGS=(clang-22 lld-22 libamdhip64-dev)

missing_pkgs() {  # one dpkg-query for all: this runs on every (usually no-op) call
  local installed p
  installed=$(dpkg-query -W -f='${Package} ${Status}\n' "$@" 2>/dev/null \
                | sed -n 's/ install ok installed$//p' || true)
  for p in "$@"; do
    grep -qxF "$p" <<<"$installed" || echo "$p"
  done
}

ensure_pkgs() {
  if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
    die "this script needs a Debian system (dpkg and apt-get); it builds Kokkos from Debian's source package"
  fi
  local missing
  missing=$(missing_pkgs "$@" | paste -sd' ')
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    die "missing Debian packages: $missing. Only root can install them: run 'apt-get install $missing' as root (or ./uq deps), then retry"
  fi
  say "installing Debian packages: $missing"
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2086
  if ! apt-get install -y --no-install-recommends --no-upgrade $missing >&2; then
    apt-get update >&2
    # shellcheck disable=SC2086
    apt-get install -y --no-install-recommends --no-upgrade $missing >&2
  fi
}

# ---------------------------------------------------------------- compilers
find_nvcc() {
  if [ -n "${CUDA_ROOT:-}" ]; then
    [ -x "$CUDA_ROOT/bin/nvcc" ] || die "CUDA_ROOT=$CUDA_ROOT has no bin/nvcc"
    echo "$CUDA_ROOT/bin/nvcc"
  elif command -v nvcc >/dev/null; then
    command -v nvcc
  elif [ -x /usr/local/cuda/bin/nvcc ]; then
    echo /usr/local/cuda/bin/nvcc
  else
    die "the cuda variant needs the CUDA toolkit's nvcc: put it on PATH or set CUDA_ROOT"
  fi
}

# One line per compiler that goes into the build, so that a new toolkit means a new prefix.
compiler_identity() {
  echo "g++ $(g++ -dumpfullversion)"
  if [ "$VARIANT" = cuda ]; then
    echo "nvcc $("$NVCC" --version | tail -n 1)"
  fi
  if [ "$VARIANT" = hip ]; then
    echo "clang $("$HIP_CXX" --version | head -n 1)"
    echo "hip $(dpkg-query -W -f='${Package} ${Version}' libamdhip64-dev)"
  fi
}

# ---------------------------------------------------------------- hip: device libraries
# clang-22 compiles HIP for gfx950 only with AMD's device libraries (ocml, ockl, oclc_*)
# built for gfx950; Debian 12's rocm-device-libs stop at gfx940. Sid's rocm-device-libs-21
# has gfx950, and bookworm's rocm-device-libs has the hip.bc that Debian 12's HIP 5.2
# headers need (__threadfence calls its __atomic_work_item_fence; the 7.x one has none).
# Both .debs are fetched with `apt-get download` through rocm-device-libs.list and unpacked
# with dpkg-deb -x into the install prefix; nothing is installed on the machine.
source "$HERE/hip-device-libs.sh"

# ---------------------------------------------------------------- Debian source package
# apt works on the project's sources file and on lists kept in the cache; the machine's apt
# configuration (sources, lists, package cache) is left alone.
APT_DIR="$SRC_CACHE/apt"
APT_OPTS=(-o "Dir::Etc::sourcelist=$SOURCES_LIST" -o "Dir::Etc::SourceParts=/dev/null"
          -o "Dir::State::Lists=$APT_DIR/lists" -o "Dir::Cache=$APT_DIR/cache")

have_source_index() {
  compgen -G "$APT_DIR/lists/*_Sources*" >/dev/null
}

# Callers hold the source lock.
refresh_source_index() {
  say "updating the apt source index for $SOURCES_LIST"
  mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial"
  local log="$SRC_CACHE/apt-update.log"
  if ! apt-get -q "${APT_OPTS[@]}" update >"$log" 2>&1 || ! have_source_index; then
    cat "$log" >&2
    die "apt-get update with $SOURCES_LIST failed (log above)"
  fi
}

# The newest version of the source package in the cached index (refreshed if absent).
source_version() {
  (
    flock 8
    if [ "${UQ_KOKKOS_REFRESH:-0}" = 1 ] || ! have_source_index; then refresh_source_index; fi
    apt-cache "${APT_OPTS[@]}" showsrc --only-source "$SOURCE_PACKAGE" 2>/dev/null \
      | sed -n 's/^Version: //p' | sort -V | tail -n 1
  ) 8>"$SRC_CACHE/.lock"
}

# Downloads the source package (verified by apt against the signed index) into $SRC_CACHE
# and prints the path of its upstream tarball. Returns 1 when the version is no longer served.
upstream_tarball() {  # upstream version -> path of the downloaded tarball, if any
  compgen -G "$SRC_CACHE/${SOURCE_PACKAGE}_$1.orig.tar.*" | grep -v '\.asc$' | head -n 1 || true
}

fetch_source() {
  local version="$1" upstream="${1%-*}"
  (
    flock 8
    local orig
    orig=$(upstream_tarball "$upstream")
    if [ -z "$orig" ] || [ ! -f "$SRC_CACHE/${SOURCE_PACKAGE}_${version}.dsc" ]; then
      say "downloading Debian source package $SOURCE_PACKAGE $version"
      local log="$SRC_CACHE/apt-source.log"
      if ! (cd "$SRC_CACHE" && apt-get -q "${APT_OPTS[@]}" source --download-only \
              "$SOURCE_PACKAGE=$version") >"$log" 2>&1; then
        cat "$log" >&2
        exit 1
      fi
      orig=$(upstream_tarball "$upstream")
      [ -n "$orig" ] || die "apt-get source gave no ${SOURCE_PACKAGE}_${upstream}.orig.tar.* in $SRC_CACHE"
    fi
    echo "$orig"
  ) 8>"$SRC_CACHE/.lock"
}

# Extracts packages/kokkos of the upstream tarball into $2 (only that folder).
extract_kokkos() {
  local orig="$1" dest="$2"
  mkdir -p "$dest"
  tar -xf "$orig" -C "$dest" --strip-components=3 \
      --wildcards --no-wildcards-match-slash '*/packages/kokkos'
  [ -f "$dest/CMakeLists.txt" ] || die "$orig has no */packages/kokkos"
}

kokkos_version_of() {  # source dir -> 3.4.01
  sed -n 's/^set(Kokkos_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\))$/\2/p' "$1/CMakeLists.txt" \
    | paste -sd.
}

apply_patches() {
  local src="$1" p
  for p in "$PATCH_DIR"/*.patch; do
    say "patch $(basename "$p")"
    patch -d "$src" -p1 --batch --forward --silent --no-backup-if-mismatch -r - <"$p" \
      || die "$(basename "$p") does not apply to $src (did the Kokkos source change?)"
  done
}

# ---------------------------------------------------------------- configure and build
kokkos_cmake_args() {
  local prefix="$1"
  local args=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_INSTALL_PREFIX=$prefix" -DCMAKE_INSTALL_LIBDIR=lib
              -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_EXTENSIONS=OFF
              # static libraries with PIC: test binaries copied to a GPU machine need no
              # Kokkos .so there, and the libraries can still go into a shared object
              -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON
              -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF)
  case "$VARIANT" in
    openmp)
      args+=(-DCMAKE_CXX_COMPILER=g++ -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_SERIAL=ON) ;;
    hip)
      # Kokkos_HIP_OPTIONS (patch 06) reach every HIP compile of Kokkos and its consumers.
      local options
      options=$(hip_compile_options "$prefix/$HIP_BITCODE_DIR" | paste -sd';')
      args+=("-DCMAKE_CXX_COMPILER=$HIP_CXX" -DKokkos_ENABLE_HIP=ON -DKokkos_ENABLE_SERIAL=ON
             -DKokkos_ARCH_AMD_GFX950=ON "-DKokkos_HIP_OPTIONS=$options") ;;
    cuda)
      # Kokkos records its compiler in its CMake package; the installed wrapper is the one
      # that stays, so build with it (copied into the prefix before configuring).
      args+=("-DCMAKE_CXX_COMPILER=$prefix/bin/nvcc_wrapper"
             -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_OPENMP=ON
             -DKokkos_ARCH_HOPPER90=ON -DKokkos_ENABLE_CUDA_LAMBDA=ON) ;;
  esac
  printf '%s\n' "${args[@]}"
}

# Runs a build step, its output into the log (and to stderr with UQ_KOKKOS_VERBOSE=1).
run_logged() {
  local log="$1"; shift
  echo "+ $*" >>"$log"
  if [ "${UQ_KOKKOS_VERBOSE:-0}" = 1 ]; then
    "$@" 2>&1 | tee -a "$log" >&2
  else
    "$@" >>"$log" 2>&1
  fi
}

build_and_install() {  # prefix version orig_tarball fetch_seconds
  local prefix="$1" version="$2" orig="$3" t_fetch="$4"
  local work="$prefix.work"
  local log="$work/build.log"
  local t0=$SECONDS
  rm -rf "$work" "$prefix"
  mkdir -p "$work"
  : >"$log"

  extract_kokkos "$orig" "$work/kokkos"
  local kversion
  kversion=$(kokkos_version_of "$work/kokkos")
  say "Kokkos $kversion from $(basename "$orig")"
  apply_patches "$work/kokkos"

  if [ "$VARIANT" = hip ]; then
    install_device_libs "$prefix/$HIP_BITCODE_DIR"
  fi
  if [ "$VARIANT" = cuda ]; then
    mkdir -p "$prefix/bin"
    cp "$work/kokkos/bin/nvcc_wrapper" "$prefix/bin/nvcc_wrapper"
    export CUDA_ROOT="${NVCC%/bin/nvcc}"
    export NVCC_WRAPPER_DEFAULT_COMPILER="${NVCC_WRAPPER_DEFAULT_COMPILER:-g++}"
  fi

  local args=()
  mapfile -t args < <(kokkos_cmake_args "$prefix")
  say "configure ($VARIANT); log: $log"
  local t1=$SECONDS
  run_logged "$log" cmake -S "$work/kokkos" -B "$work/build" "${args[@]}" \
    || { tail -n 40 "$log" >&2; die "Kokkos configure failed; full log: $log"; }
  say "build with $JOBS jobs"
  run_logged "$log" cmake --build "$work/build" -j "$JOBS" \
    || { grep -n -m 20 -E 'error|Error' "$log" >&2 || true; tail -n 20 "$log" >&2
         die "Kokkos build failed; full log: $log"; }
  run_logged "$log" cmake --install "$work/build" \
    || { tail -n 20 "$log" >&2; die "Kokkos install failed; full log: $log"; }
  local t_build=$((SECONDS - t1))

  mkdir -p "$prefix/share/uq"
  cp "$log" "$prefix/share/uq/kokkos-build.log"
  cp "$PATCH_DIR"/*.patch "$prefix/share/uq/"
  {
    echo "variant: $VARIANT"
    echo "kokkos: $kversion"
    echo "source: Debian $SOURCE_PACKAGE $version ($(basename "$orig"))"
    echo "patches: $(cd "$PATCH_DIR" && echo *.patch)"
    compiler_identity | sed 's/^/compiler: /'
    if [ "$VARIANT" = hip ]; then device_lib_identity | sed 's/^/device libraries: /'; fi
    echo "cmake: ${args[*]}"
    echo "fetch_seconds: $t_fetch"
    echo "build_seconds: $t_build"
    echo "jobs: $JOBS"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)"
  } >"$prefix/$STAMP_NAME.tmp"
  mv "$prefix/$STAMP_NAME.tmp" "$prefix/$STAMP_NAME"  # the stamp last: the prefix is complete
  rm -rf "$work"
  say "built Kokkos $VARIANT: download $t_fetch s, extract+patch+configure+build+install $((SECONDS - t0)) s (build $t_build s)"
}

# ---------------------------------------------------------------- main
if [ "$VARIANT" = hip ]; then NEEDED_PKGS+=("${HIP_PKGS[@]}"); fi
ensure_pkgs "${NEEDED_PKGS[@]}"
if ! mkdir -p "$SRC_CACHE" 2>/dev/null || [ ! -w "$CACHE" ]; then
  die "cannot write the cache folder $CACHE: set UQ_CACHE to a writable folder"
fi
NVCC=""
if [ "$VARIANT" = cuda ]; then NVCC=$(find_nvcc); fi
HIP_CXX=""
if [ "$VARIANT" = hip ]; then
  HIP_CXX=$(command -v clang++-22) || die "the hip variant needs clang++-22 (Debian package clang-22)"
  DEVICE_LIBS=$(device_lib_versions) || die "could not read the device libraries' apt index"
fi

VERSION=$(source_version) || die "could not read the apt source index in $APT_DIR"
[ -n "$VERSION" ] || die "no source package '$SOURCE_PACKAGE' in the index of $SOURCES_LIST"

KEY=$(
  {
    echo "variant $VARIANT"
    echo "source $SOURCE_PACKAGE $VERSION"
    compiler_identity
    if [ "$VARIANT" = hip ]; then
      device_lib_identity
      for f in "$HERE/hip-device-libs.sh" "$DEVICE_LIBS_LIST"; do
        echo "file $(basename "$f")"
        cat "$f"
      done
    fi
    for f in "$SELF" "$SOURCES_LIST" "$PATCH_DIR"/*.patch; do
      echo "file $(basename "$f")"
      cat "$f"
    done
  } | sha256sum | cut -c1-16
)
PREFIX="$CACHE/kokkos-$VARIANT-$KEY"

if [ -f "$PREFIX/$STAMP_NAME" ]; then
  say "Kokkos $VARIANT is installed (inputs unchanged): $PREFIX"
  echo "$PREFIX" >&3
  exit 0
fi

exec 9>"$PREFIX.lock"
if ! flock -n 9; then
  say "another build of $PREFIX is running; waiting for it"
  flock 9
fi
if [ ! -f "$PREFIX/$STAMP_NAME" ]; then
  say "building Kokkos $VARIANT from Debian $SOURCE_PACKAGE $VERSION into $PREFIX"
  t_start=$SECONDS
  if ! ORIG=$(fetch_source "$VERSION"); then
    # Debian replaced the version our index names: refresh the index once and start over
    # (the new version gives a new hash, hence a new prefix).
    [ "${UQ_KOKKOS_RETRIED:-0}" = 0 ] || die "could not download $SOURCE_PACKAGE $VERSION"
    say "$SOURCE_PACKAGE $VERSION could not be downloaded; refreshing the source index and retrying"
    exec 9>&-
    UQ_KOKKOS_RETRIED=1 UQ_KOKKOS_REFRESH=1 exec "$SELF" "$VARIANT" 1>&3
  fi
  if [ "$VARIANT" = hip ] && ! fetch_device_libs; then
    [ "${UQ_KOKKOS_RETRIED:-0}" = 0 ] || die "could not download the device libraries: $DEVICE_LIBS"
    say "a device-library package could not be downloaded; refreshing the indexes and retrying"
    exec 9>&-
    UQ_KOKKOS_RETRIED=1 UQ_KOKKOS_REFRESH=1 exec "$SELF" "$VARIANT" 1>&3
  fi
  build_and_install "$PREFIX" "$VERSION" "$ORIG" $((SECONDS - t_start))
fi
echo "$PREFIX" >&3
