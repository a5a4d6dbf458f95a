#!/usr/bin/env bash
# Extracts the public-domain photos the sample recordings are made of from Debian packages, without
# installing the packages: grace_hopper_512x512.jpg and a no-face landscape from `facedetect`,
# astronaut.png from `python3-skimage`. They land in Recordings/faces/ (ignored by git).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="$here/faces"
want=(grace_hopper_512x512.jpg 640px-IceBlockNearJoekullsarlon.jpg astronaut.png)
missing=0
for f in "${want[@]}"; do [ -f "$out/$f" ] || missing=1; done
[ "$missing" = 0 ] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cd "$work"
apt-get download facedetect python3-skimage >/dev/null 2>&1 || { apt-get update -qq; apt-get download facedetect python3-skimage >/dev/null; }
for deb in *.deb; do dpkg -x "$deb" x; done
cp x/usr/share/doc/facedetect/examples/grace_hopper_512x512.jpg "$out/"
cp x/usr/share/doc/facedetect/examples/640px-IceBlockNearJoekullsarlon.jpg "$out/"
cp x/usr/lib/python3/dist-packages/skimage/data/astronaut.png "$out/"
cd "$out" && sha256sum -c --quiet "$here/photos.sha256"
