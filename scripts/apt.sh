# apt.sh: sourced by the scripts that install Debian packages (zk.sh, kdc.sh, db.sh, chromium.sh).
#
# apt_install PACKAGE CHECK_FILE: install PACKAGE with apt-get unless CHECK_FILE
# exists (apt-get update first when the package is unknown). Messages go to stderr,
# prefixed with $APT_WHO; it returns non-zero, saying why, when it cannot install.
apt_install() {
	local pkg=$1 check=$2 who=${APT_WHO:-apt.sh}
	[ -e "$check" ] && return 0
	if ! command -v apt-get >/dev/null; then
		echo "$who: $pkg is not installed and apt-get is not available" >&2
		return 1
	fi
	local sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo -n"
	if ! apt-cache show "$pkg" >/dev/null 2>&1 || [ -z "$(apt-cache policy "$pkg" 2>/dev/null | grep Candidate: | grep -v none)" ]; then
		echo "$who: apt-get update (package $pkg unknown)" >&2
		$sudo apt-get update -qq >&2 || { echo "$who: apt-get update failed" >&2; return 1; }
	fi
	echo "$who: apt-get install -y $pkg" >&2
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$pkg" >&2 ||
		{ echo "$who: apt-get install $pkg failed" >&2; return 1; }
	[ -e "$check" ] || { echo "$who: $pkg installed but $check is missing" >&2; return 1; }
}
