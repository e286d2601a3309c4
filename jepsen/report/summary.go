package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/raftstream/raftstream/jepsen/checker"
)

// Exit codes of a fault-injection run.
const (
	ExitValid   = 0 // every checker Ok
	ExitInvalid = 1 // some checker found an anomaly
	ExitUnknown = 2 // some checker could not decide, or the harness failed
)

// ExitCode maps results to the runner's exit code: ExitInvalid if any
// checker is Illegal (an anomaly found is real even if the harness later
// failed), else ExitUnknown if harnessErr is set or any checker is Unknown
// (or there are no results), else ExitValid.
func ExitCode(rs []checker.Result, harnessErr error) int {
	switch checker.Merge(rs) {
	case checker.Illegal:
		return ExitInvalid
	case checker.Unknown:
		return ExitUnknown
	}
	if harnessErr != nil || len(rs) == 0 {
		return ExitUnknown
	}
	return ExitValid
}

// Summary writes one line per checker (verdict, name, anomaly count, first
// anomalies and notes) and ends with exactly "N passed, N failed", where
// passed counts Ok checkers and failed counts the others (Illegal or
// Unknown), so the two add up to the number of checkers.
func Summary(w io.Writer, rs []checker.Result) error {
	var b strings.Builder
	passed, failed := 0, 0
	for _, r := range rs {
		if r.Valid == checker.Ok {
			passed++
		} else {
			failed++
		}
		fmt.Fprintf(&b, "%-8s %-13s %d anomalies", r.Valid, r.Name, len(r.Anomalies))
		if len(r.Notes) > 0 {
			fmt.Fprintf(&b, "  (%s)", strings.Join(r.Notes, "; "))
		}
		b.WriteByte('\n')
		for i, a := range r.Anomalies {
			if i == 3 {
				fmt.Fprintf(&b, "         … %d more\n", len(r.Anomalies)-i)
				break
			}
			fmt.Fprintf(&b, "         %s: %s\n", a.Kind, a.Msg)
		}
	}
	fmt.Fprintf(&b, "%d passed, %d failed\n", passed, failed)
	_, err := io.WriteString(w, b.String())
	return err
}
