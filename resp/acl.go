package resp

import (
	"os"
	"time"

	"github.com/raftstream/raftstream/resp/acl"
	"github.com/raftstream/raftstream/resp/command"
)

// The server's side of access control: who a connection is, the one
// permission check admit makes, AUTH, and the ACL file. The users, the
// rules and their decisions live in resp/acl.

// checkPerm reports the NOPERM error (and logs it in ACL LOG) when c's user
// may not run cmd with argv, or nil. Commands flagged no_auth (AUTH, HELLO)
// need no permission.
func (s *Server) checkPerm(c *client, cmd *command.Command, argv [][]byte) *errReply {
	u := c.aclUser(s)
	if u == nil || cmd.Flags&command.FlagNoAuth != 0 {
		return nil
	}
	d := u.Allowed(cmd, argv)
	if d == nil {
		return nil
	}
	s.logDenial(c, d.Reason, d.Object, u.Name())
	switch {
	case d.Reason == acl.ReasonKey:
		return errorf("NOPERM this user has no permissions to access one of the keys used as arguments")
	case cmd.Name == "exec":
		c.multi = nil
		return errorf("EXECABORT Transaction discarded because of: NOPERM this user has no permissions to run the 'exec' command")
	default:
		return errorf("NOPERM this user has no permissions to run the '%s' command", cmd.Name)
	}
}

// logDenial records a denial of c in ACL LOG.
func (s *Server) logDenial(c *client, reason, object, user string) {
	ctx := "toplevel"
	if c.multi != nil {
		ctx = "multi"
	}
	s.aclLog.Add(acl.LogEntry{Reason: reason, Context: ctx, Object: object, Username: user,
		ClientInfo: c.infoLine()}, time.Now())
}

// aclUser returns the user c runs as, refreshed to its current rules (nil
// when the connection is not authenticated or its user was deleted).
func (c *client) aclUser(s *Server) *acl.User {
	if c.user == nil {
		if c.authed {
			c.user = s.acl.Get("default")
		}
		return c.user
	}
	c.user = s.acl.Refresh(c.user)
	return c.user
}

// restricted reports whether c must go through the permission checks
// (the pipelined fast paths skip them).
func (c *client) restricted(s *Server) bool {
	u := c.aclUser(s)
	return u == nil || !u.Unrestricted()
}

// aclAuth authenticates c as name/pass (AUTH, HELLO AUTH), logging a
// failure in ACL LOG.
func (s *Server) aclAuth(c *client, name, pass []byte) *errReply {
	u := s.acl.Authenticate(name, pass)
	if u == nil {
		s.logDenial(c, acl.ReasonAuth, "AUTH", string(name))
		return errWrongPass
	}
	c.user, c.authed = u, true
	return nil
}

// userName is the name of the user c runs as ("default" before AUTH).
func (c *client) userName() string {
	if c.user == nil {
		return "default"
	}
	return c.user.Name()
}

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
	return s.acl.Load(f, path)
}
