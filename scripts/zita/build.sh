#!/bin/sh
# Builds scripts/zita/build/zita_bench against Debian's zita-convolver and FFTW (single precision).
# Installs nothing: if a package is missing it says which and exits non-zero.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
missing=""
[ -f /usr/include/zita-convolver.h ] || missing="$missing libzita-convolver-dev"
[ -f /usr/include/fftw3.h ] || missing="$missing libfftw3-dev"
command -v g++ >/dev/null 2>&1 || missing="$missing g++"
if [ -n "$missing" ]; then
    echo "build.sh: missing:$missing" >&2
    echo "build.sh: install with: apt-get install libzita-convolver-dev libfftw3-dev g++" >&2
    exit 1
fi
mkdir -p "$here/build"
# Plain -O2: the harness does no heavy arithmetic; the work is in Debian's libzita and libfftw3f,
# built generic x86-64 as a user gets them.
g++ -std=c++17 -O2 -Wall -Wextra -o "$here/build/zita_bench" "$here/zita_bench.cpp" \
    -lzita-convolver -lfftw3f -lpthread
echo "$here/build/zita_bench"
