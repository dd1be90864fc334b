#!/usr/bin/env bash
# Builds a self-contained directory `bundle/` for a Linux x86-64 GPU host that has only the NVIDIA
# driver and the CUDA toolkit: LLVM linked statically, every other shared library the binaries need
# (beyond glibc and the driver) copied into bundle/lib, and an rpath of $ORIGIN/../lib. libcuda and
# NVRTC are opened with dlopen at run time, from the host.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUNDLE_BUILD:-build-bundle}
OUT=${BUNDLE_OUT:-bundle}

bash scripts/setup.sh
command -v patchelf >/dev/null || { apt-get install -y -qq patchelf >/dev/null; }

cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithInfoAndAsserts -DTESSEL_STATIC_LLVM=ON \
  -DCMAKE_CXX_FLAGS_RELWITHINFOANDASSERTS="-O2" >/dev/null
targets=(tessel tessel-runner tessel_runtime_shared ${BUNDLE_EXTRA:-})  # BUNDLE_EXTRA: more targets
for t in test_cuda test_measure test_runtime test_tools; do  # the GPU tests (bin/test-gpu); CPU tests run where the build is
  ninja -C "$BUILD" -t targets all 2>/dev/null | grep -q "^$t:" && targets+=("$t")
done
cmake --build "$BUILD" --target "${targets[@]}"

rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"
for t in "${targets[@]}"; do
  [ "$t" = tessel_runtime_shared ] && continue
  bin=$(find "$BUILD" -type f -name "$t" -perm -u+x | head -n 1)
  cp "$bin" "$OUT/bin/"
  strip "$OUT/bin/$t"
done
# The runtime library other languages embed, and the Python module over it (it finds the library
# beside itself).
mkdir -p "$OUT/python/tessel"
cp tools/python/tessel/*.py "$OUT/python/tessel/"
cp "$BUILD/runtime/libtessel_runtime.so" "$OUT/python/tessel/"
cp tools/compare.py scripts/export_models.py "$OUT/bin/"

# Shared libraries to carry: everything ldd resolves except the C library, the dynamic loader and
# the GPU driver (those must come from the host); and OpenBLAS, which the neural ranker opens at run
# time (costmodel/blas.h), with what it needs.
openblas=$(ldconfig -p | awk '/libopenblas\.so\.0 .*x86-64/ && !found {print $NF; found = 1}')
[ -n "$openblas" ] || { echo "error: libopenblas.so.0 not found (scripts/setup.sh installs it)" >&2; exit 1; }
is_elf() { [ "$(head -c 4 "$1" | tail -c 3)" = ELF ]; }  # bin/ also holds scripts
for b in "$OUT"/bin/* "$openblas"; do
  is_elf "$b" || continue
  ldd "$b" | awk '/=> \//{print $3}'
  [ "$b" = "$openblas" ] && echo "$openblas"
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|ld-linux*|libcuda.so*|libnvrtc*) ;;
    *) cp -L "$lib" "$OUT/lib/" ;;
  esac
done
for b in "$OUT"/bin/*; do if is_elf "$b"; then patchelf --set-rpath '$ORIGIN/../lib' "$b"; fi; done
for l in "$OUT"/lib/*; do patchelf --set-rpath '$ORIGIN' "$l" 2>/dev/null || true; done

# The tests tagged [gpu] of the test programs carried, run on the GPU host; a skip (no usable GPU)
# fails it like a failing test.
cat > "$OUT/bin/test-gpu" <<'SH'
#!/bin/sh
# Runs the bundle's GPU tests (tagged [gpu]); exits 1 when one fails or is skipped (no usable GPU).
cd "$(dirname "$0")" || exit 1
status=0
ran=0
for t in test_cuda test_measure test_runtime test_tools; do
  [ -x "$t" ] || continue
  ran=$((ran + 1))
  TESSEL_EXE="$PWD/tessel" ./"$t" "[gpu]"
  rc=$?
  if [ $rc -eq 77 ]; then echo "test-gpu: $t skipped its GPU tests: no usable GPU here" >&2; status=1
  elif [ $rc -ne 0 ]; then echo "test-gpu: $t failed" >&2; status=1; fi
done
[ $ran -gt 0 ] || { echo "test-gpu: no GPU test programs in this bundle" >&2; exit 1; }
[ $status -eq 0 ] && echo "test-gpu: every GPU test passed"
exit $status
SH
chmod +x "$OUT/bin/test-gpu"

cp suites/operators.json "$OUT/"
cat > "$OUT/README" <<'TXT'
tessel bundle: bin/tessel (LLVM static), bin/tessel-runner, test binaries and bin/test-gpu (runs their GPU
tests), lib/ (carried shared libraries), python/tessel (the runtime's Python module and
libtessel_runtime.so), bin/compare.py (tessel against torch and onnxruntime on a model).
Needs on the host: glibc, the NVIDIA driver (libcuda.so.1) and NVRTC (libnvrtc.so, from the CUDA toolkit).
TXT
du -sh "$OUT"
# The compressed copy is what travels to a GPU host (dist/ is ignored by git): unpacked there by the
# GPU scripts under experiments/ when bundle/ is missing.
mkdir -p dist
# xz: three binaries carry LLVM statically, and xz packs them about a third smaller than gzip.
rm -f dist/bundle.tgz
tar -C "$(dirname "$OUT")" -cf - "$(basename "$OUT")" | xz -6 -T0 > dist/bundle.tar.xz
echo "compressed: $(du -h dist/bundle.tar.xz | cut -f1) (dist/bundle.tar.xz)"
