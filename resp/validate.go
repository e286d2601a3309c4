package resp

import (
	"time"

	"github.com/raftstream/raftstream/engine"
)

// validate runs the engine's stateless check of a write on the leader side,
// so that garbage never enters the log. A nil result means "propose it".
func (s *Server) validate(argv [][]byte) reply {
	if er := engine.ValidateGroupCommand(nowMs(), argv); er != nil {
		return er
	}
	return nil
}

func nowMs() int64 { return time.Now().UnixMilli() }
