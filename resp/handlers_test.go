package resp

import (
	"strings"
	"testing"
)

// TestHandlersMatchTheTable: the server's handlers and the command table's
// KindLocal rows are the same set (init would have panicked otherwise), and
// attach refuses each way they can disagree, naming the command.
func TestHandlersMatchTheTable(t *testing.T) {
	if _, err := attach(localHandlers()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(map[string]localFunc)
		want string
	}{
		{func(m map[string]localFunc) { delete(m, "ping") }, `no handler for "ping"`},
		{func(m map[string]localFunc) { m["nosuch"] = cmdPing }, `handler for "nosuch", which is not in the command table`},
		{func(m map[string]localFunc) { m["xadd"] = cmdPing }, `handler for "xadd", which the engine executes`},
	} {
		m := localHandlers()
		c.edit(m)
		_, err := attach(m)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("attach: %v, want an error with %q", err, c.want)
		}
	}
}
