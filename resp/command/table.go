package command

// The rows. Arity, flags, key positions, categories, tips and docs are
// Redis 7's (COMMAND INFO and COMMAND DOCS of redis-server 7.0, compared by
// tests; summaries are 7.0's word for word, the rest of the docs is in
// docs/, see docs.go), plus the commands Redis added later that raftstream
// answers (8.x's stream commands, CLIENT SETINFO, CLUSTER MYSHARDID, SLOWLOG
// and LATENCY's 7.x rows, ...) and raftstream's own RAFTSTREAM family and
// XGROUP SETDLQ.

// the flag sets Redis uses most often
const (
	fWF   = FlagWrite | FlagFast
	fWDF  = FlagWrite | FlagDenyOOM | FlagFast
	fRO   = FlagReadonly
	fROF  = FlagReadonly | FlagFast
	fConn = FlagNoScript | FlagLoading | FlagStale
	fLSF  = FlagLoading | FlagStale | FlagFast
	fAdm  = FlagAdmin | FlagNoScript | FlagLoading | FlagStale
	fHelp = FlagLoading | FlagStale
)

func add(c *Command) *Command {
	if _, dup := top[c.Name]; dup {
		panic("command: duplicate command " + c.Name)
	}
	register(c)
	top[c.Name] = c
	return c
}

// sub adds subcommands to a container command.
func sub(parent *Command, subs ...*Command) {
	parent.Kind = KindContainer
	parent.Sub = map[string]*Command{}
	for _, s := range subs {
		name := s.Name
		s.Name = parent.Name + "|" + s.Name
		register(s)
		parent.Sub[name] = s
	}
}

func register(c *Command) {
	if c.Step == 0 && c.First != 0 {
		c.Step = 1
	}
	c.ID = len(all)
	all = append(all, c)
}

func init() {
	top = map[string]*Command{}

	// ---- streams (executed by the engine) ----
	add(&Command{Name: "xadd", Arity: -5, Flags: fWDF, First: 1, Last: 1, Categories: "@write @stream @fast", Tips: []string{"nondeterministic_output"}, Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Appends a new entry to a stream"})
	add(&Command{Name: "xrange", Arity: -4, Flags: fRO, First: 1, Last: 1, Categories: "@read @stream @slow", Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "Return a range of elements in a stream, with IDs matching the specified IDs interval"})
	add(&Command{Name: "xrevrange", Arity: -4, Flags: fRO, First: 1, Last: 1, Categories: "@read @stream @slow", Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE"})
	add(&Command{Name: "xlen", Arity: 2, Flags: fROF, First: 1, Last: 1, Categories: "@read @stream @fast", Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "Return the number of entries in a stream"})
	add(&Command{Name: "xread", Arity: -4, Flags: FlagReadonly | FlagBlocking | FlagMovableKeys, StreamsKeyword: true, Categories: "@read @stream @slow @blocking", Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block."})
	add(&Command{Name: "xreadgroup", Arity: -7, Flags: FlagWrite | FlagBlocking | FlagMovableKeys, StreamsKeyword: true, Categories: "@write @stream @slow @blocking", Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block."})
	add(&Command{Name: "xack", Arity: -4, Flags: fWF, First: 1, Last: 1, Categories: "@write @stream @fast", Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL."})
	add(&Command{Name: "xpending", Arity: -3, Flags: fRO, First: 1, Last: 1, Categories: "@read @stream @slow", Tips: []string{"nondeterministic_output"}, Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged."})
	add(&Command{Name: "xclaim", Arity: -6, Flags: fWF, First: 1, Last: 1, Categories: "@write @stream @fast", Tips: []string{"nondeterministic_output"}, Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer."})
	add(&Command{Name: "xautoclaim", Arity: -6, Flags: fWF, First: 1, Last: 1, Categories: "@write @stream @fast", Tips: []string{"nondeterministic_output"}, Kind: KindWrite, Group: "stream", Since: "6.2.0", Summary: "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer."})
	add(&Command{Name: "xdel", Arity: -3, Flags: fWF, First: 1, Last: 1, Categories: "@write @stream @fast", Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist."})
	add(&Command{Name: "xtrim", Arity: -4, Flags: FlagWrite, First: 1, Last: 1, Categories: "@write @stream @slow", Tips: []string{"nondeterministic_output"}, Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Trims the stream to (approximately if '~' is passed) a certain size"})
	add(&Command{Name: "xsetid", Arity: -3, Flags: fWDF, First: 1, Last: 1, Categories: "@write @stream @fast", Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "An internal command for replicating stream values"})
	// Redis 8.x additions.
	add(&Command{Name: "xackdel", Arity: -6, Flags: fWF, First: 1, Last: 1, Categories: "@write @stream @fast", Kind: KindWrite, Group: "stream", Since: "8.2.0", Summary: "Acknowledges and deletes one or multiple messages for a stream consumer group."})
	add(&Command{Name: "xdelex", Arity: -5, Flags: fWF, First: 1, Last: 1, Categories: "@write @stream @fast", Kind: KindWrite, Group: "stream", Since: "8.2.0", Summary: "Deletes one or multiple entries from the stream."})
	add(&Command{Name: "xnack", Arity: -7, Flags: fWF, First: 1, Last: 1, Categories: "@write @stream @fast", Kind: KindWrite, Group: "stream", Since: "8.8.0", Summary: "Releases pending messages back to the group's PEL without acknowledging them, making them available for re-delivery."})
	add(&Command{Name: "xcfgset", Arity: -2, Flags: fWF, First: 1, Last: 1, Categories: "@write @stream @fast", Kind: KindWrite, Group: "stream", Since: "8.6.0", Summary: "Sets the IDMP configuration parameters for a stream."})

	xgroup := add(&Command{Name: "xgroup", Arity: -2, Categories: "@slow", Group: "stream", Since: "5.0.0", Summary: "A container for consumer groups commands"})
	sub(xgroup,
		&Command{Name: "create", Arity: -5, Flags: FlagWrite | FlagDenyOOM, First: 2, Last: 2, Categories: "@write @stream @slow", Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Create a consumer group."},
		&Command{Name: "createconsumer", Arity: 5, Flags: FlagWrite | FlagDenyOOM, First: 2, Last: 2, Categories: "@write @stream @slow", Kind: KindWrite, Group: "stream", Since: "6.2.0", Summary: "Create a consumer in a consumer group."},
		&Command{Name: "delconsumer", Arity: 5, Flags: FlagWrite, First: 2, Last: 2, Categories: "@write @stream @slow", Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Delete a consumer from a consumer group."},
		&Command{Name: "destroy", Arity: 4, Flags: FlagWrite, First: 2, Last: 2, Categories: "@write @stream @slow", Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Destroy a consumer group."},
		&Command{Name: "setid", Arity: -5, Flags: FlagWrite, First: 2, Last: 2, Categories: "@write @stream @slow", Kind: KindWrite, Group: "stream", Since: "5.0.0", Summary: "Set a consumer group to an arbitrary last delivered ID value."},
		&Command{Name: "setdlq", Arity: -5, Flags: FlagWrite, First: 2, Last: 2, Categories: "@write @stream @slow", Kind: KindWrite, Group: "stream", Since: "raftstream", Summary: "Sets or clears a consumer group's dead-letter stream (raftstream extension, not Redis)."},
		&Command{Name: "help", Arity: 2, Flags: fHelp, Categories: "@stream @slow", Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "Show helpful text about the different subcommands"},
	)
	xinfo := add(&Command{Name: "xinfo", Arity: -2, Categories: "@slow", Group: "stream", Since: "5.0.0", Summary: "A container for stream introspection commands"})
	sub(xinfo,
		&Command{Name: "stream", Arity: -3, Flags: fRO, First: 2, Last: 2, Categories: "@read @stream @slow", Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "Get information about a stream"},
		&Command{Name: "groups", Arity: 3, Flags: fRO, First: 2, Last: 2, Categories: "@read @stream @slow", Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "List the consumer groups of a stream"},
		&Command{Name: "consumers", Arity: 4, Flags: fRO, First: 2, Last: 2, Categories: "@read @stream @slow", Tips: []string{"nondeterministic_output"}, Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "List the consumers in a consumer group"},
		&Command{Name: "help", Arity: 2, Flags: fHelp, Categories: "@stream @slow", Kind: KindRead, Group: "stream", Since: "5.0.0", Summary: "Show helpful text about the different subcommands"},
	)

	// ---- keyspace and strings (executed by the engine) ----
	add(&Command{Name: "del", Arity: -2, Flags: FlagWrite, First: 1, Last: -1, Categories: "@keyspace @write @slow", Tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"}, Kind: KindWrite, Group: "generic", Since: "1.0.0", Summary: "Delete a key"})
	add(&Command{Name: "unlink", Arity: -2, Flags: fWF, First: 1, Last: -1, Categories: "@keyspace @write @fast", Tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"}, Kind: KindWrite, Group: "generic", Since: "4.0.0", Summary: "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking."})
	add(&Command{Name: "exists", Arity: -2, Flags: fROF, First: 1, Last: -1, Categories: "@keyspace @read @fast", Tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"}, Kind: KindRead, Group: "generic", Since: "1.0.0", Summary: "Determine if a key exists"})
	add(&Command{Name: "type", Arity: 2, Flags: fROF, First: 1, Last: 1, Categories: "@keyspace @read @fast", Kind: KindRead, Group: "generic", Since: "1.0.0", Summary: "Determine the type stored at key"})
	add(&Command{Name: "set", Arity: -3, Flags: FlagWrite | FlagDenyOOM, First: 1, Last: 1, Categories: "@write @string @slow", Kind: KindWrite, Group: "string", Since: "1.0.0", Summary: "Set the string value of a key"})
	add(&Command{Name: "get", Arity: 2, Flags: fROF, First: 1, Last: 1, Categories: "@read @string @fast", Kind: KindRead, Group: "string", Since: "1.0.0", Summary: "Get the value of a key"})
	// key expiry (engine/expire.go)
	add(&Command{Name: "expire", Arity: -3, Flags: fWF, First: 1, Last: 1, Categories: "@keyspace @write @fast", Kind: KindWrite, Group: "generic", Since: "1.0.0", Summary: "Set a key's time to live in seconds"})
	add(&Command{Name: "pexpire", Arity: -3, Flags: fWF, First: 1, Last: 1, Categories: "@keyspace @write @fast", Kind: KindWrite, Group: "generic", Since: "2.6.0", Summary: "Set a key's time to live in milliseconds"})
	add(&Command{Name: "expireat", Arity: -3, Flags: fWF, First: 1, Last: 1, Categories: "@keyspace @write @fast", Kind: KindWrite, Group: "generic", Since: "1.2.0", Summary: "Set the expiration for a key as a UNIX timestamp"})
	add(&Command{Name: "pexpireat", Arity: -3, Flags: fWF, First: 1, Last: 1, Categories: "@keyspace @write @fast", Kind: KindWrite, Group: "generic", Since: "2.6.0", Summary: "Set the expiration for a key as a UNIX timestamp specified in milliseconds"})
	add(&Command{Name: "ttl", Arity: 2, Flags: fROF, First: 1, Last: 1, Categories: "@keyspace @read @fast", Tips: []string{"nondeterministic_output"}, Kind: KindRead, Group: "generic", Since: "1.0.0", Summary: "Get the time to live for a key in seconds"})
	add(&Command{Name: "pttl", Arity: 2, Flags: fROF, First: 1, Last: 1, Categories: "@keyspace @read @fast", Tips: []string{"nondeterministic_output"}, Kind: KindRead, Group: "generic", Since: "2.6.0", Summary: "Get the time to live for a key in milliseconds"})
	add(&Command{Name: "expiretime", Arity: 2, Flags: fROF, First: 1, Last: 1, Categories: "@keyspace @read @fast", Kind: KindRead, Group: "generic", Since: "7.0.0", Summary: "Get the expiration Unix timestamp for a key"})
	add(&Command{Name: "pexpiretime", Arity: 2, Flags: fROF, First: 1, Last: 1, Categories: "@keyspace @read @fast", Kind: KindRead, Group: "generic", Since: "7.0.0", Summary: "Get the expiration Unix timestamp for a key in milliseconds"})
	add(&Command{Name: "persist", Arity: 2, Flags: fWF, First: 1, Last: 1, Categories: "@keyspace @write @fast", Kind: KindWrite, Group: "generic", Since: "2.2.0", Summary: "Remove the expiration from a key"})
	add(&Command{Name: "getex", Arity: -2, Flags: fWF, First: 1, Last: 1, Categories: "@write @string @fast", Kind: KindWrite, Group: "string", Since: "6.2.0", Summary: "Get the value of a key and optionally set its expiration"})
	add(&Command{Name: "rename", Arity: 3, Flags: FlagWrite, First: 1, Last: 2, Categories: "@keyspace @write @slow", Kind: KindWrite, Group: "generic", Since: "1.0.0", Summary: "Rename a key"})
	add(&Command{Name: "renamenx", Arity: 3, Flags: fWF, First: 1, Last: 2, Categories: "@keyspace @write @fast", Kind: KindWrite, Group: "generic", Since: "1.0.0", Summary: "Rename a key, only if the new key does not exist"})
	add(&Command{Name: "scan", Arity: -2, Flags: fRO, Categories: "@keyspace @read @slow", Tips: []string{"nondeterministic_output", "request_policy:special"}, Kind: KindLocal, Group: "generic", Since: "2.8.0", Summary: "Incrementally iterate the keys space"})
	add(&Command{Name: "keys", Arity: 2, Flags: fRO, Categories: "@keyspace @read @slow @dangerous", Tips: []string{"request_policy:all_shards", "nondeterministic_output_order"}, Kind: KindLocal, Group: "generic", Since: "1.0.0", Summary: "Find all keys matching the given pattern"})
	add(&Command{Name: "dbsize", Arity: 1, Flags: fROF, Categories: "@keyspace @read @fast", Tips: []string{"request_policy:all_shards", "response_policy:agg_sum"}, Kind: KindLocal, Group: "server", Since: "1.0.0", Summary: "Return the number of keys in the selected database"})
	add(&Command{Name: "flushall", Arity: -1, Flags: FlagWrite, Categories: "@keyspace @write @slow @dangerous", Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"}, Kind: KindLocal, Group: "server", Since: "1.0.0", Summary: "Remove all keys from all databases"})
	add(&Command{Name: "flushdb", Arity: -1, Flags: FlagWrite, Categories: "@keyspace @write @slow @dangerous", Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"}, Kind: KindLocal, Group: "server", Since: "1.0.0", Summary: "Remove all keys from the current database"})
	memory := add(&Command{Name: "memory", Arity: -2, Categories: "@slow", Group: "server", Since: "4.0.0", Summary: "A container for memory diagnostics commands"})
	sub(memory,
		&Command{Name: "usage", Arity: -3, Flags: fRO, First: 2, Last: 2, Categories: "@read @slow", Kind: KindRead, Group: "server", Since: "4.0.0", Summary: "Estimate the memory usage of a key"},
		&Command{Name: "help", Arity: 2, Flags: fHelp, Categories: "@slow", Kind: KindRead, Group: "server", Since: "4.0.0", Summary: "Show helpful text about the different subcommands"},
	)
	object := add(&Command{Name: "object", Arity: -2, Categories: "@slow", Group: "generic", Since: "2.2.3", Summary: "A container for object introspection commands"})
	sub(object,
		&Command{Name: "encoding", Arity: 3, Flags: fRO, First: 2, Last: 2, Categories: "@keyspace @read @slow", Kind: KindRead, Group: "generic", Since: "2.2.3", Summary: "Inspect the internal encoding of a Redis object"},
		&Command{Name: "help", Arity: 2, Flags: fHelp, Categories: "@keyspace @slow", Kind: KindRead, Group: "generic", Since: "6.2.0", Summary: "Show helpful text about the different subcommands"},
	)

	// ---- connection and server (answered by resp) ----
	add(&Command{Name: "ping", Arity: -1, Flags: FlagFast, Categories: "@fast @connection", Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"}, Kind: KindLocal, Group: "connection", Since: "1.0.0", Summary: "Ping the server"})
	add(&Command{Name: "echo", Arity: 2, Flags: fLSF, Categories: "@fast @connection", Kind: KindLocal, Group: "connection", Since: "1.0.0", Summary: "Echo the given string"})
	add(&Command{Name: "hello", Arity: -1, Flags: FlagNoScript | fLSF | FlagNoAuth | FlagAllowBusy, Categories: "@fast @connection", Kind: KindLocal, Group: "connection", Since: "6.0.0", Summary: "Handshake with Redis"})
	add(&Command{Name: "auth", Arity: -2, Flags: FlagNoScript | fLSF | FlagNoAuth | FlagAllowBusy, Categories: "@fast @connection", Kind: KindLocal, Group: "connection", Since: "1.0.0", Summary: "Authenticate to the server"})
	add(&Command{Name: "select", Arity: 2, Flags: fLSF, Categories: "@fast @connection", Kind: KindLocal, Group: "connection", Since: "1.0.0", Summary: "Change the selected database for the current connection"})
	add(&Command{Name: "quit", Arity: -1, Flags: FlagNoScript | fLSF | FlagNoAuth | FlagAllowBusy, Categories: "@fast @connection", Kind: KindLocal, Group: "connection", Since: "1.0.0", Summary: "Close the connection"})
	add(&Command{Name: "reset", Arity: 1, Flags: FlagNoScript | fLSF | FlagNoAuth | FlagAllowBusy, Categories: "@fast @connection", Kind: KindLocal, Group: "connection", Since: "6.2.0", Summary: "Reset the connection"})
	add(&Command{Name: "readonly", Arity: 1, Flags: fLSF, Categories: "@fast @connection", Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Enables read queries for a connection to a cluster replica node"})
	add(&Command{Name: "readwrite", Arity: 1, Flags: fLSF, Categories: "@fast @connection", Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Disables read queries for a connection to a cluster replica node"})
	add(&Command{Name: "asking", Arity: 1, Flags: FlagFast, Categories: "@fast @connection", Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Sent by cluster clients after an -ASK redirect"})
	add(&Command{Name: "time", Arity: 1, Flags: fLSF, Categories: "@fast", Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "server", Since: "2.6.0", Summary: "Return the current server time"})
	add(&Command{Name: "wait", Arity: 3, Flags: FlagNoScript, Categories: "@slow @connection", Tips: []string{"request_policy:all_shards", "response_policy:agg_min"}, Kind: KindLocal, Group: "generic", Since: "3.0.0", Summary: "Wait for the synchronous replication of all the write commands sent in the context of the current connection"})
	add(&Command{Name: "waitaof", Arity: 4, Flags: FlagNoScript, Categories: "@slow @connection", Tips: []string{"request_policy:all_shards", "response_policy:agg_min"}, Kind: KindLocal, Group: "generic", Since: "7.2.0", Summary: "Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the master and/or replicas."})
	add(&Command{Name: "info", Arity: -1, Flags: fHelp, Categories: "@slow @dangerous", Tips: []string{"nondeterministic_output", "request_policy:all_shards", "response_policy:special"}, Kind: KindLocal, Group: "server", Since: "1.0.0", Summary: "Get information and statistics about the server"})
	add(&Command{Name: "save", Arity: 1, Flags: FlagAdmin | FlagNoScript | FlagNoAsyncLoading | FlagNoMulti, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "1.0.0", Summary: "Synchronously save the dataset to disk"})
	add(&Command{Name: "bgsave", Arity: -1, Flags: FlagAdmin | FlagNoScript | FlagNoAsyncLoading, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "1.0.0", Summary: "Asynchronously save the dataset to disk"})
	add(&Command{Name: "lastsave", Arity: 1, Flags: fLSF, Categories: "@admin @fast @dangerous", Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "server", Since: "1.0.0", Summary: "Get the UNIX time stamp of the last successful save to disk"})
	add(&Command{Name: "monitor", Arity: 1, Flags: fAdm, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "1.0.0", Summary: "Listen for all requests received by the server in real time"})
	add(&Command{Name: "debug", Arity: -2, Flags: fAdm, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "1.0.0", Summary: "A container for debugging commands"})
	add(&Command{Name: "multi", Arity: 1, Flags: FlagNoScript | fLSF | FlagAllowBusy, Categories: "@fast @transaction", Kind: KindLocal, Group: "transactions", Since: "1.2.0", Summary: "Mark the start of a transaction block"})
	add(&Command{Name: "exec", Arity: 1, Flags: FlagNoScript | fHelp | FlagSkipSlowlog, Categories: "@slow @transaction", Kind: KindLocal, Group: "transactions", Since: "1.2.0", Summary: "Execute all commands issued after MULTI"})
	// NB: WATCH is not implemented (it needs a check-and-apply condition in
	// the log entry); UNWATCH is, trivially, since nothing is ever watched.
	add(&Command{Name: "unwatch", Arity: 1, Flags: FlagNoScript | fLSF | FlagAllowBusy, Categories: "@fast @transaction", Kind: KindLocal, Group: "transactions", Since: "2.2.0", Summary: "Forget about all watched keys"})
	add(&Command{Name: "discard", Arity: 1, Flags: FlagNoScript | fLSF | FlagAllowBusy, Categories: "@fast @transaction", Kind: KindLocal, Group: "transactions", Since: "2.0.0", Summary: "Discard all commands issued after MULTI"})

	client := add(&Command{Name: "client", Arity: -2, Categories: "@slow", Group: "connection", Since: "2.4.0", Summary: "A container for client connection commands"})
	cc := "@slow @connection"
	ca := "@admin @slow @dangerous @connection"
	sub(client,
		&Command{Name: "id", Arity: 2, Flags: fConn, Categories: cc, Kind: KindLocal, Group: "connection", Since: "5.0.0", Summary: "Returns the client ID for the current connection"},
		&Command{Name: "getname", Arity: 2, Flags: fConn, Categories: cc, Kind: KindLocal, Group: "connection", Since: "2.6.9", Summary: "Get the current connection name"},
		&Command{Name: "setname", Arity: 3, Flags: fConn, Categories: cc, Kind: KindLocal, Group: "connection", Since: "2.6.9", Summary: "Set the current connection name"},
		&Command{Name: "setinfo", Arity: 4, Flags: fConn, Categories: cc, Kind: KindLocal, Group: "connection", Since: "7.2.0", Summary: "Sets information specific to the client or connection."},
		&Command{Name: "info", Arity: 2, Flags: fConn, Categories: cc, Kind: KindLocal, Group: "connection", Since: "6.2.0", Summary: "Returns information about the current client connection."},
		&Command{Name: "list", Arity: -2, Flags: fAdm, Categories: ca, Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "connection", Since: "2.4.0", Summary: "Get the list of client connections"},
		&Command{Name: "kill", Arity: -3, Flags: fAdm, Categories: ca, Kind: KindLocal, Group: "connection", Since: "2.4.0", Summary: "Kill the connection of a client"},
		&Command{Name: "no-evict", Arity: 3, Flags: fAdm, Categories: ca, Kind: KindLocal, Group: "connection", Since: "7.0.0", Summary: "Set client eviction mode for the current connection"},
		&Command{Name: "no-touch", Arity: 3, Flags: fConn, Categories: cc, Kind: KindLocal, Group: "connection", Since: "7.2.0", Summary: "Controls whether commands sent by the client affect the LRU/LFU of accessed keys."},
		&Command{Name: "pause", Arity: -3, Flags: fAdm, Categories: ca, Kind: KindLocal, Group: "connection", Since: "2.9.50", Summary: "Stop processing commands from clients for some time"},
		&Command{Name: "unpause", Arity: 2, Flags: fAdm, Categories: ca, Kind: KindLocal, Group: "connection", Since: "6.2.0", Summary: "Resume processing of clients that were paused"},
		&Command{Name: "unblock", Arity: -3, Flags: fAdm, Categories: ca, Kind: KindLocal, Group: "connection", Since: "5.0.0", Summary: "Unblock a client blocked in a blocking command from a different connection"},
		&Command{Name: "help", Arity: 2, Flags: fHelp, Categories: cc, Kind: KindLocal, Group: "connection", Since: "5.0.0", Summary: "Show helpful text about the different subcommands"},
	)
	config := add(&Command{Name: "config", Arity: -2, Categories: "@slow", Group: "server", Since: "2.0.0", Summary: "A container for server configuration commands"})
	sub(config,
		&Command{Name: "get", Arity: -3, Flags: fAdm, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "2.0.0", Summary: "Get the values of configuration parameters"},
		&Command{Name: "set", Arity: -4, Flags: fAdm, Categories: "@admin @slow @dangerous", Tips: []string{"request_policy:all_nodes", "response_policy:all_succeeded"}, Kind: KindLocal, Group: "server", Since: "2.0.0", Summary: "Set configuration parameters to the given values"},
		&Command{Name: "resetstat", Arity: 2, Flags: fAdm, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "2.0.0", Summary: "Reset the stats returned by INFO"},
		&Command{Name: "rewrite", Arity: 2, Flags: fAdm, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "2.8.0", Summary: "Rewrite the configuration file with the in memory configuration"},
		&Command{Name: "help", Arity: 2, Flags: fHelp, Categories: "@slow", Kind: KindLocal, Group: "server", Since: "5.0.0", Summary: "Show helpful text about the different subcommands"},
	)
	// SLOWLOG and LATENCY (per node: resp/slowlog.go, resp/latency.go).
	fSlow := FlagAdmin | FlagLoading | FlagStale
	slowlog := add(&Command{Name: "slowlog", Arity: -2, Categories: "@slow", Group: "server", Since: "2.2.12", Summary: "A container for slow log commands"})
	sub(slowlog,
		&Command{Name: "get", Arity: -2, Flags: fSlow, Categories: "@admin @slow @dangerous", Tips: []string{"request_policy:all_nodes", "nondeterministic_output"}, Kind: KindLocal, Group: "server", Since: "2.2.12", Summary: "Get the slow log's entries"},
		&Command{Name: "len", Arity: 2, Flags: fSlow, Categories: "@admin @slow @dangerous", Tips: []string{"request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"}, Kind: KindLocal, Group: "server", Since: "2.2.12", Summary: "Get the slow log's length"},
		&Command{Name: "reset", Arity: 2, Flags: fSlow, Categories: "@admin @slow @dangerous", Tips: []string{"request_policy:all_nodes", "response_policy:all_succeeded"}, Kind: KindLocal, Group: "server", Since: "2.2.12", Summary: "Clear all entries from the slow log"},
		&Command{Name: "help", Arity: 2, Flags: fHelp, Categories: "@slow", Kind: KindLocal, Group: "server", Since: "6.2.0", Summary: "Show helpful text about the different subcommands"},
	)
	latency := add(&Command{Name: "latency", Arity: -2, Categories: "@slow", Group: "server", Since: "2.8.13", Summary: "A container for latency diagnostics commands"})
	latTips := []string{"nondeterministic_output", "request_policy:all_nodes", "response_policy:special"}
	sub(latency,
		&Command{Name: "latest", Arity: 2, Flags: fAdm, Categories: "@admin @slow @dangerous", Tips: latTips, Kind: KindLocal, Group: "server", Since: "2.8.13", Summary: "Return the latest latency samples for all events."},
		&Command{Name: "history", Arity: 3, Flags: fAdm, Categories: "@admin @slow @dangerous", Tips: latTips, Kind: KindLocal, Group: "server", Since: "2.8.13", Summary: "Return timestamp-latency samples for the event."},
		&Command{Name: "reset", Arity: -2, Flags: fAdm, Categories: "@admin @slow @dangerous", Tips: []string{"request_policy:all_nodes", "response_policy:all_succeeded"}, Kind: KindLocal, Group: "server", Since: "2.8.13", Summary: "Reset latency data for one or more events."},
		&Command{Name: "doctor", Arity: 2, Flags: fAdm, Categories: "@admin @slow @dangerous", Tips: latTips, Kind: KindLocal, Group: "server", Since: "2.8.13", Summary: "Return a human readable latency analysis report."},
		&Command{Name: "help", Arity: 2, Flags: fHelp, Categories: "@slow", Kind: KindLocal, Group: "server", Since: "2.8.13", Summary: "Show helpful text about the different subcommands."},
	)
	function := add(&Command{Name: "function", Arity: -2, Categories: "@slow", Group: "scripting", Since: "7.0.0", Summary: "A container for function commands"})
	sub(function,
		&Command{Name: "flush", Arity: -2, Flags: FlagWrite | FlagNoScript, Categories: "@write @slow @scripting", Kind: KindLocal, Group: "scripting", Since: "7.0.0", Summary: "Deleting all functions"},
		&Command{Name: "list", Arity: -2, Flags: FlagNoScript, Categories: "@slow @scripting", Kind: KindLocal, Group: "scripting", Since: "7.0.0", Summary: "List information about all the functions"},
		&Command{Name: "help", Arity: 2, Flags: fHelp, Categories: "@slow @scripting", Kind: KindLocal, Group: "scripting", Since: "7.0.0", Summary: "Show helpful text about the different subcommands"},
	)
	cluster := add(&Command{Name: "cluster", Arity: -2, Categories: "@slow", Group: "cluster", Since: "3.0.0", Summary: "A container for cluster commands"})
	sub(cluster,
		&Command{Name: "keyslot", Arity: 3, Flags: FlagStale, Categories: "@slow", Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Returns the hash slot of the specified key"},
		&Command{Name: "myid", Arity: 2, Flags: FlagStale, Categories: "@slow", Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Return the node id"},
		&Command{Name: "slots", Arity: 2, Flags: FlagStale, Categories: "@slow", Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Get array of Cluster slot to node mappings"},
		&Command{Name: "shards", Arity: 2, Flags: FlagStale, Categories: "@slow", Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "cluster", Since: "7.0.0", Summary: "Get array of cluster slots to node mappings"},
		&Command{Name: "nodes", Arity: 2, Flags: FlagStale, Categories: "@slow", Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Get Cluster config for the node"},
		&Command{Name: "info", Arity: 2, Flags: FlagStale, Categories: "@slow", Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Provides info about Redis Cluster node state"},
		&Command{Name: "countkeysinslot", Arity: 3, Flags: FlagStale, Categories: "@slow", Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Return the number of local keys in the specified hash slot"},
		&Command{Name: "getkeysinslot", Arity: 4, Flags: FlagStale, Categories: "@slow", Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Return local key names in the specified hash slot"},
		&Command{Name: "replicas", Arity: 3, Flags: FlagAdmin | FlagStale, Categories: "@admin @slow @dangerous", Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "cluster", Since: "5.0.0", Summary: "List replica nodes of the specified master node"},
		&Command{Name: "links", Arity: 2, Flags: FlagStale, Categories: "@slow", Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "cluster", Since: "7.0.0", Summary: "Returns a list of all TCP links to and from peer nodes in cluster"},
		&Command{Name: "myshardid", Arity: 2, Flags: FlagStale, Categories: "@slow", Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "cluster", Since: "7.2.0", Summary: "Returns the shard ID of a node."},
		&Command{Name: "help", Arity: 2, Flags: fHelp, Categories: "@slow", Kind: KindLocal, Group: "cluster", Since: "5.0.0", Summary: "Show helpful text about the different subcommands"},
		// Redis's own topology commands: raftstream moves slots itself
		// (RAFTSTREAM SLOTS MOVE); these answer an error that says so.
		&Command{Name: "setslot", Arity: -4, Flags: FlagAdmin | FlagStale | FlagNoAsyncLoading, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Bind a hash slot to a specific node"},
		&Command{Name: "addslots", Arity: -3, Flags: FlagAdmin | FlagStale | FlagNoAsyncLoading, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Assign new hash slots to receiving node"},
		&Command{Name: "delslots", Arity: -3, Flags: FlagAdmin | FlagStale | FlagNoAsyncLoading, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "cluster", Since: "3.0.0", Summary: "Set hash slots as unbound in receiving node"},
		&Command{Name: "addslotsrange", Arity: -4, Flags: FlagAdmin | FlagStale | FlagNoAsyncLoading, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "cluster", Since: "7.0.0", Summary: "Assign new hash slots to receiving node"},
		&Command{Name: "delslotsrange", Arity: -4, Flags: FlagAdmin | FlagStale | FlagNoAsyncLoading, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "cluster", Since: "7.0.0", Summary: "Set hash slots as unbound in receiving node"},
	)
	add(&Command{Name: "migrate", Arity: -6, Flags: FlagWrite | FlagMovableKeys, First: 3, Last: 3, Step: 1, Categories: "@keyspace @write @slow @dangerous", Tips: []string{"nondeterministic_output"}, Kind: KindLocal, Group: "generic", Since: "2.6.0", Summary: "Atomically transfer a key from a Redis instance to another one."})
	// ---- raftstream administration ----
	rs := add(&Command{Name: "raftstream", Arity: -2, Categories: "@admin @slow @dangerous", Group: "server", Since: "7.0.0", Summary: "A container for raftstream administration commands."})
	sub(rs,
		&Command{Name: "status", Arity: 2, Flags: FlagAdmin | FlagNoScript | FlagStale, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Returns the Raft state of every shard replica hosted on this node."},
		&Command{Name: "transfer-leader", Arity: -3, Flags: FlagAdmin | FlagNoScript, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Hands leadership of a shard led by this node to another replica."},
		&Command{Name: "snapshot", Arity: -2, Flags: FlagAdmin | FlagNoScript, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Takes a Raft snapshot of one or every shard replica hosted on this node."},
		&Command{Name: "retention", Arity: -3, Flags: FlagAdmin | FlagNoScript, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Sets, shows or removes the retention policies (maximum length, age or bytes) the broker enforces on matching streams (raftstream extension)."},
		&Command{Name: "backup", Arity: -3, Flags: FlagAdmin | FlagNoScript, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Reads a shard's state at a linearizable point, on its leader, in chunks (raftstream backup)."},
		&Command{Name: "remove-node", Arity: 3, Flags: FlagAdmin | FlagNoScript, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Drains a member (its replicas move, its leaderships are handed over) and drops it from the cluster."},
		&Command{Name: "help", Arity: 2, Flags: fHelp, Categories: "@slow", Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Show helpful text about the different subcommands"},
		&Command{Name: "shard", Arity: -3, Flags: FlagAdmin | FlagNoScript, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Adds a shard (ADD [node-id ...]), retires an empty one (REMOVE shard), shows or sets the shard policy (POLICY)."},
		&Command{Name: "slots", Arity: -3, Flags: FlagAdmin | FlagNoScript | FlagStale, Categories: "@admin @slow @dangerous", Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Moves hash slots between shards online (MOVE first-last shard) and reports the moves in flight (STATUS)."},
	)
	command := add(&Command{Name: "command", Arity: -1, Flags: fHelp, Categories: "@slow @connection", Tips: []string{"nondeterministic_output_order"}, Kind: KindLocal, Group: "server", Since: "2.8.13", Summary: "Get array of Redis command details"})
	sub(command,
		&Command{Name: "count", Arity: 2, Flags: fHelp, Categories: "@slow @connection", Kind: KindLocal, Group: "server", Since: "2.8.13", Summary: "Get total number of Redis commands"},
		&Command{Name: "info", Arity: -2, Flags: fHelp, Categories: "@slow @connection", Tips: []string{"nondeterministic_output_order"}, Kind: KindLocal, Group: "server", Since: "2.8.13", Summary: "Get array of specific Redis command details, or all when no argument is given."},
		&Command{Name: "docs", Arity: -2, Flags: fHelp, Categories: "@slow @connection", Tips: []string{"nondeterministic_output_order"}, Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Get array of specific Redis command documentation"},
		&Command{Name: "getkeys", Arity: -4, Flags: fHelp, Categories: "@slow @connection", Kind: KindLocal, Group: "server", Since: "2.8.13", Summary: "Extract keys given a full Redis command"},
		&Command{Name: "list", Arity: -2, Flags: fHelp, Categories: "@slow @connection", Tips: []string{"nondeterministic_output_order"}, Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Get an array of Redis command names"},
		&Command{Name: "help", Arity: 2, Flags: fHelp, Categories: "@slow @connection", Kind: KindLocal, Group: "server", Since: "5.0.0", Summary: "Show helpful text about the different subcommands"},
	)
	// COMMAND with no subcommand is answered by the container itself.
	command.Kind = KindLocal

	// ---- access control (answered by resp) ----
	const cats = "@admin @slow @dangerous"
	acl := add(&Command{Name: "acl", Arity: -2, Categories: "@slow", Group: "server", Since: "6.0.0", Summary: "A container for Access List Control commands "})
	sub(acl,
		&Command{Name: "setuser", Arity: -3, Flags: fAdm, Categories: cats, Kind: KindLocal, Group: "server", Since: "6.0.0", Summary: "Modify or create the rules for a specific ACL user"},
		&Command{Name: "getuser", Arity: 3, Flags: fAdm, Categories: cats, Kind: KindLocal, Group: "server", Since: "6.0.0", Summary: "Get the rules for a specific ACL user"},
		&Command{Name: "deluser", Arity: -3, Flags: fAdm, Categories: cats, Kind: KindLocal, Group: "server", Since: "6.0.0", Summary: "Remove the specified ACL users and the associated rules"},
		&Command{Name: "list", Arity: 2, Flags: fAdm, Categories: cats, Kind: KindLocal, Group: "server", Since: "6.0.0", Summary: "List the current ACL rules in ACL config file format"},
		&Command{Name: "users", Arity: 2, Flags: fAdm, Categories: cats, Kind: KindLocal, Group: "server", Since: "6.0.0", Summary: "List the username of all the configured ACL rules"},
		&Command{Name: "whoami", Arity: 2, Flags: FlagNoScript | FlagLoading | FlagStale, Categories: "@slow", Kind: KindLocal, Group: "server", Since: "6.0.0", Summary: "Return the name of the user associated to the current connection"},
		&Command{Name: "cat", Arity: -2, Flags: FlagNoScript | FlagLoading | FlagStale, Categories: "@slow", Kind: KindLocal, Group: "server", Since: "6.0.0", Summary: "List the ACL categories or the commands inside a category"},
		&Command{Name: "log", Arity: -2, Flags: fAdm, Categories: cats, Kind: KindLocal, Group: "server", Since: "6.0.0", Summary: "List latest events denied because of ACLs in place"},
		&Command{Name: "dryrun", Arity: -4, Flags: fAdm, Categories: cats, Kind: KindLocal, Group: "server", Since: "7.0.0", Summary: "Returns whether the user can execute the given command without executing the command."},
		&Command{Name: "help", Arity: 2, Flags: fHelp, Categories: "@slow", Kind: KindLocal, Group: "server", Since: "6.0.0", Summary: "Show helpful text about the different subcommands"},
	)

	attachDocs()
}
