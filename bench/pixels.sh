#!/usr/bin/env bash
# pixels.sh - bench/pixels.py (ringfeed's Resize 256 + CenterCrop 224 against
# torchvision's, on real photographs) with what it needs: scikit-image for
# bench/gpu/photos.py (Debian's python3-skimage, through scripts/deps.sh) and
# the Python package of build folder B (default build/, built if missing).
#
#   bench/pixels.sh [pixels.py options: --data DIR --count N --large N ...]
#
# The photo sets are made once under --data (default /tmp/ringfeed-pixels).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
B=${B:-$root/build}
"$root/scripts/deps.sh" python3-skimage python3-torchvision
[ -d "$B/python/ringfeed" ] || "$root/scripts/build.sh" "$B"
PYTHONPATH="$B/python" exec /usr/bin/python3 "$root/bench/pixels.py" "$@"
