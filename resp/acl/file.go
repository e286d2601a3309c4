package acl

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"strings"
)

// Load applies a Redis ACL file read from r: one "user <name> <rule>..."
// per line, each applied as ACL SETUSER <name> <rule>... would be, in
// order; blank lines and "#" comments are ignored. name is the file's name
// for error messages. Any bad line refuses the whole file (nothing is
// applied) with an error "name:line: reason", as Redis does; an error
// reading r is returned as it is.
func (s *Store) Load(r io.Reader, name string) error {
	s.mu.Lock()
	probe := maps.Clone(s.users) // the lines are checked on a copy first
	s.mu.Unlock()
	type line struct {
		user string
		ops  []string
	}
	var lines []line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if fields[0] != "user" || len(fields) < 2 {
			return fmt.Errorf("%s:%d: should start with user keyword", name, n)
		}
		u, er := edited(probe[fields[1]], fields[1], fields[2:])
		if er != nil {
			return fmt.Errorf("%s:%d: %s", name, n, strings.TrimPrefix(er.Msg, "ERR "))
		}
		probe[fields[1]] = u
		lines = append(lines, line{fields[1], fields[2:]})
	}
	if err := sc.Err(); err != nil {
		return err
	}
	// Applied to the users as they are now, as that many SETUSERs.
	for _, l := range lines {
		_ = s.SetUser(l.user, l.ops)
	}
	return nil
}
