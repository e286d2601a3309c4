package resp

import "time"

// nowMs is the wall clock in Unix ms, the "now" of reads (writes take the
// time stamped on their log entry).
func nowMs() int64 { return time.Now().UnixMilli() }
