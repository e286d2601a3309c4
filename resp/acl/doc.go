// Package acl is raftstream's access control, as Redis 7.0's ACL has it:
// users, the rules that say what each may run and touch, the ACL LOG and
// the ACL file. It is data and decisions only: no connections, no network,
// no goroutines, no clock (times are passed in). The server (package resp)
// asks it and answers the client.
//
// # Users
//
// A User has a name, is on or off, and either accepts any password
// ("nopass") or holds SHA-256 digests of its passwords (HashPassword; a
// clear password is never stored). Its key patterns ("~p" for read and
// write, "%R~p", "%W~p"; "allkeys" is "~*") say which keys it may touch,
// and its command rules which commands it may run. A Store holds the users
// by name; a new one has only "default", which may do everything and whose
// password is requirepass (or nopass without one). ACL SETUSER modifiers
// are applied to a copy of the user, all or nothing (Store.SetUser, with
// Redis's error texts), and the copy replaces it: a published User never
// changes, so a connection may hold one without locks and ask the Store
// for the current version (Refresh) before each check.
//
// # Rules apply in order
//
// A user's command rules start from "+@all" or "-@all" ("allcommands",
// "nocommands"); each later "+" rule grants and each "-" rule revokes the
// category ("@read", "@stream", ...) or the command it names, and a rule
// naming a container ("xgroup") covers all of its subcommands. The last
// rule that matches a command decides. A new rule for a command replaces
// an earlier one for the same command, so "+xadd -xadd +xadd" keeps one.
// ACL LIST shows the rules the way Redis prints them (User.Describe):
// the base, the category rules, then the command rules that still change
// something.
//
// # What Allowed decides
//
// User.Allowed(cmd, argv) answers one question for one row of the command
// table (resp/command) and the request's arguments: may this user run it?
// First the command rules; then every key of argv (cmd.Keys) against the
// key patterns, needing read access for a read, write access for a write,
// and both for XREADGROUP. The answer is nil or a Denial naming the
// command or the first key refused, in the words ACL LOG records. Which
// commands need no permission at all (AUTH, HELLO) and what the client is
// told are the server's business.
//
// # The log and the file
//
// Log is ACL LOG: the latest denials, a repeat within 60 s counted in its
// entry. Store.Load reads an ACL file ("user <name> <rules>..." per line)
// and applies it whole or not at all.
package acl
