#!/usr/bin/env bash
# Installs the Debian packages axonn.c needs, only those missing (as root, or via sudo).
set -euo pipefail
pkgs=(build-essential cmake pkg-config openmpi-bin libopenmpi-dev
      libopenblas-openmp-dev libdnnl-dev libjansson-dev libpcre2-dev libxxhash-dev libisal-dev fortunes python3)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "deps: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
