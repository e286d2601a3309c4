package fsm

import "github.com/raftstream/raftstream/engine"

// validateCommand is the leader-side check Submit runs before proposing, at
// the leader's clock, so that commands that can only fail never enter the
// log: engine.Validate, which rejects only what Exec would reject whatever
// the state (syntax, arity, argument values). A rejected command gets the
// error as its reply. A variable so tests can substitute a validator.
var validateCommand = engine.Validate
