// Package history records and reads the operation histories of the
// fault-injection suite: one JSON object per line (JSONL), appended while the
// test runs and checked afterwards by package jepsen/checker.
//
// # Events
//
// Every client operation is written twice: an "invoke" event when the client
// sends the command and one completion event when it learns the outcome:
//
//	{"index":7,"process":2,"type":"invoke","f":"xadd","key":"s0","value":{"value":"2-17"},"time":1834021}
//	{"index":9,"process":2,"type":"ok","f":"xadd","key":"s0","value":{"value":"2-17","id":"1764669600123-0"},"time":2210044}
//
// Fields:
//
//   - index: position in the file, strictly increasing from 0.
//   - process: the client that ran the operation (an integer, one
//     operation outstanding per process at a time), or the string "nemesis"
//     for fault events.
//   - type: "invoke"; then exactly one of "ok" (the operation took effect and
//     this is its result), "fail" (it certainly did not take effect), or
//     "info" (unknown outcome: a timeout, a dropped connection, an error that
//     does not prove the command was rejected). A process whose invoke has no
//     completion when the file ends is treated as "info".
//   - f: the operation: xadd, xadd-idmp, xrange, xread, xreadgroup, xack,
//     xautoclaim, xpending; for the nemesis start, stop, heal.
//   - key: the stream.
//   - value: the operation's input on invoke and its input plus result on
//     completion (see Value). Absent when the operation has none.
//   - time: nanoseconds since the history began (monotonic clock).
//   - error: the error text of a fail or info completion.
//
// # Values by operation
//
//   - xadd: value = the unique string written (field "v"); id = the entry ID
//     the server returned (ok only).
//   - xadd-idmp: as xadd, plus producer and iid (the IDMP producer and
//     idempotency ID). Retrying the same value with the same iid is allowed;
//     every ok reply for one value must carry the same id.
//   - xrange / xread: entries = the (id, value) pairs read, in reply order,
//     each written as a two-element array ["1-0","v"]; full = true when the
//     read covers the whole stream (XRANGE key - +, XREAD from 0-0 with no
//     COUNT limit hit); from = the exclusive start ID of a partial XREAD.
//   - xreadgroup: group, consumer, from (">" for new entries, an ID for the
//     consumer's pending entries) and entries delivered.
//   - xack: group, ids acknowledged, count = the number the server reported.
//   - xautoclaim: group, consumer, from (start ID), entries claimed and ids =
//     the deleted IDs the server reported.
//   - xpending: group and pending = the full pending list of the group
//     (id, consumer, deliveries), as XPENDING key group - + <large count>.
//   - nemesis start / stop: fault = a description naming the fault
//     ("partition n1|n2,n3", "kill n2"); a stop ends the window of the start
//     with the same fault. heal: every fault has been removed; operations
//     invoked after the last heal form the final window that liveness and
//     eventual-delivery checks look at.
//
// # Unknown outcomes
//
// An outcome is never guessed. Writer.Complete classifies the client's
// error with Classify: only a server error reply whose code proves the
// command was not executed (MOVED, TRYAGAIN, NOGROUP, ...) is a "fail";
// timeouts, connection errors and anything else are "info". Checkers treat
// an info write as possibly applied at any time after its invocation.
package history
