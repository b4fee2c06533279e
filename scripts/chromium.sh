#!/usr/bin/env bash
# chromium.sh: Debian's headless-capable chromium for the console's browser
# tests (internal/browsertest).
#
#   chromium.sh install    install the chromium package if missing; print its path
set -euo pipefail
APT_WHO=chromium.sh
# shellcheck source=apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

case "${1:-install}" in
install)
	apt_install chromium /usr/bin/chromium || exit 1
	echo /usr/bin/chromium
	;;
*)
	echo "usage: chromium.sh install" >&2
	exit 2
	;;
esac
