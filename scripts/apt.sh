# apt.sh: sourced by the scripts that install Debian packages (zk.sh, kdc.sh, db.sh, chromium.sh).
#
# apt_install PACKAGE CHECK_FILE: install PACKAGE with apt-get unless CHECK_FILE
# exists (apt-get update first when the package is unknown). Messages go to stderr,
# prefixed with $APT_WHO; it returns non-zero, saying why, when it cannot install.
#
# `go test ./...` runs packages in parallel, and several of them may need a
# package on a fresh machine at once (MariaDB for core/tracing and
# plugins/tracing/rdb): dpkg takes one installer at a time and the second
# apt-get failed at once on its lock. So installs by these scripts queue on
# a lock file of their own (flock), the check is repeated once the lock is
# held (the one before may have installed it), and apt-get waits for dpkg's
# lock held by anything else (DPkg::Lock::Timeout).
APT_LOCK_WAIT=${APT_LOCK_WAIT:-900}
apt_install() {
	local pkg=$1 check=$2 who=${APT_WHO:-apt.sh}
	[ -e "$check" ] && return 0
	if ! command -v apt-get >/dev/null; then
		echo "$who: $pkg is not installed and apt-get is not available" >&2
		return 1
	fi
	(
		if ! flock -w "$APT_LOCK_WAIT" 9; then
			echo "$who: waited ${APT_LOCK_WAIT}s for another install by these scripts (lock ${TMPDIR:-/tmp}/ejob-apt.lock)" >&2
			exit 1
		fi
		[ -e "$check" ] && exit 0
		local sudo=""
		[ "$(id -u)" -eq 0 ] || sudo="sudo -n"
		local wait=(-o "DPkg::Lock::Timeout=$APT_LOCK_WAIT")
		if ! apt-cache show "$pkg" >/dev/null 2>&1 || [ -z "$(apt-cache policy "$pkg" 2>/dev/null | grep Candidate: | grep -v none)" ]; then
			echo "$who: apt-get update (package $pkg unknown)" >&2
			$sudo apt-get "${wait[@]}" update -qq >&2 || { echo "$who: apt-get update failed" >&2; exit 1; }
		fi
		echo "$who: apt-get install -y $pkg" >&2
		DEBIAN_FRONTEND=noninteractive $sudo apt-get "${wait[@]}" install -y -qq "$pkg" >&2 ||
			{ echo "$who: apt-get install $pkg failed" >&2; exit 1; }
		[ -e "$check" ] || { echo "$who: $pkg installed but $check is missing" >&2; exit 1; }
	) 9>"${TMPDIR:-/tmp}/ejob-apt.lock"
}
