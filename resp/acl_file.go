package resp

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// LoadACLFile applies a Redis ACL file (--aclfile): one "user <name>
// <rule>..." per line, blank lines and "#" comments ignored. The users it
// defines are this node's starting point; replicated ACL SETUSER/DELUSER
// changes apply on top. Any bad line refuses the whole file (nothing is
// applied) with the line number, as Redis does. Passwords should be given
// as #<sha256> so that the file holds no clear text.
func (s *Server) LoadACLFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	probe := &aclStore{users: map[string]*aclUser{}}
	for name, u := range s.acl.snapshot() {
		probe.users[name] = u
	}
	type line struct {
		name string
		ops  []string
	}
	var lines []line
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if fields[0] != "user" || len(fields) < 2 {
			return fmt.Errorf("%s:%d: should start with user keyword", path, n)
		}
		if er := probe.setUser(fields[1], fields[2:]); er != nil {
			return fmt.Errorf("%s:%d: %s", path, n, strings.TrimPrefix(er.Msg, "ERR "))
		}
		lines = append(lines, line{fields[1], fields[2:]})
	}
	if err := sc.Err(); err != nil {
		return err
	}
	for _, l := range lines {
		_ = s.acl.setUser(l.name, l.ops)
	}
	return nil
}

// snapshot returns the current users.
func (a *aclStore) snapshot() map[string]*aclUser {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]*aclUser, len(a.users))
	for k, v := range a.users {
		out[k] = v
	}
	return out
}
