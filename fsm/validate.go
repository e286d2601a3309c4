package fsm

import "github.com/raftstream/raftstream/engine"

// validateCommand is the leader-side check run by Submit before a command is
// proposed, so that commands that can only fail never enter the log. It must
// reject only what Exec would reject whatever the state (syntax, arity,
// argument values), since Apply must produce the same error on every replica
// anyway; a rejected command gets the returned error as its reply.
//
// NB: engine has no validator yet; bind this to it (engine.Validate) when it
// lands. Until then everything is proposed and errors come from Apply, which
// is correct, just less economical.
var validateCommand = func(argv [][]byte) *engine.Error { return nil }
