#!/usr/bin/env bash
# Runs raftstream's test suite, first installing what the tests need when it
# is missing: redis-server and redis-cli (the differential tests compare
# replies with a real Redis) and nft (the fault-injection suite's
# network-namespace tests). Installing needs root and Debian's apt; without
# them, it says what to install and stops.
#
#   deploy/test.sh [go test flags...]     e.g. deploy/test.sh -run TestTutorial
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=()
command -v redis-server >/dev/null && command -v redis-cli >/dev/null || pkgs+=(redis-server redis-tools)
command -v nft >/dev/null || pkgs+=(nftables)
if [ ${#pkgs[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
		echo "the tests need: ${pkgs[*]} (install them, e.g. sudo apt-get install ${pkgs[*]})" >&2
		exit 1
	fi
	echo "installing ${pkgs[*]}" >&2
	apt-get update -qq
	apt-get -o DPkg::Lock::Timeout=120 install -y -qq "${pkgs[@]}" >/dev/null
fi

# The whole tree unless packages are named.
case " $* " in
*" ./"*) ;;
*) set -- "$@" ./... ;;
esac
exec go test -race -count=1 -timeout 30m "$@"
