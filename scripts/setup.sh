#!/usr/bin/env bash
# Installs tessel's build and test dependencies from Debian 12 packages. Idempotent: packages that
# are already installed are skipped, and nothing is done when all of them are present.
set -euo pipefail

packages=(
  cmake ninja-build g++ make pkg-config
  llvm-19-dev libzstd-dev zlib1g-dev libxml2-dev libedit-dev libffi-dev libncurses-dev
  libsqlite3-dev sqlite3
  libpq-dev postgresql
  libxgboost-dev
  nlohmann-json3-dev
  catch2
  libcli11-dev
  libopenblas-dev
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  python3-torch python3-torchvision python3-onnx python3-numpy python3-matplotlib
  patchelf
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
