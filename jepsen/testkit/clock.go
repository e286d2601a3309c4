package testkit

import (
	"strconv"
	"strings"
	"time"
)

// ExpandTime replaces a command argument "@s±N" or "@ms±N" by the Unix time
// now in seconds or milliseconds plus N ("@s" and "@ms" alone: now), so that
// a script can name absolute times (EXPIREAT, SET … PXAT) that are the same
// for raftstream and redis-server. Other arguments are returned as they are.
func ExpandTime(arg string, now time.Time) string {
	var base int64
	var rest string
	switch {
	case strings.HasPrefix(arg, "@ms"):
		base, rest = now.UnixMilli(), arg[3:]
	case strings.HasPrefix(arg, "@s"):
		base, rest = now.Unix(), arg[2:]
	default:
		return arg
	}
	if rest == "" {
		return strconv.FormatInt(base, 10)
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		return arg
	}
	return strconv.FormatInt(base+n, 10)
}
