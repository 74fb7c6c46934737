#!/bin/sh
# pack.sh — .devpkg/: pflex and everything it needs to run on a lent GPU
# machine whose C library differs from this one's (tools/device/README.md).
#   sh tools/device/pack.sh        (from the repository root; -j2)
# pflex is built in build-dev/ against GSL's reference CBLAS (one small
# shared library, where OpenBLAS would bring libgfortran and its threads);
# .devpkg/lib gets every shared library ldd lists for it, the dynamic
# loader, and the read-only NVML.  Run it there through the carried loader:
#   .devpkg/lib/ld-linux-x86-64.so.2 --library-path .devpkg/lib .devpkg/bin/pflex
set -eu
make -j2 BUILD=build-dev BLAS_LIBS=-lgslcblas build-dev/pflex build-dev/nvml-readonly/libnvml_readonly.so
rm -rf .devpkg
mkdir -p .devpkg/bin .devpkg/lib
cp build-dev/pflex .devpkg/bin/pflex
cp build-dev/nvml-readonly/libnvml_readonly.so .devpkg/lib/
ldd build-dev/pflex | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
while read -r lib; do
    case $lib in
    */ld-linux*) cp -L "$lib" .devpkg/lib/ld-linux-x86-64.so.2 ;;
    *) cp -L "$lib" .devpkg/lib/ ;;
    esac
done
ls .devpkg/lib | wc -l | xargs echo ".devpkg/lib: libraries:"
du -sh .devpkg
