package engine

// Leader-side validation: the syntax phase of write commands, run before a
// command is proposed so that commands that can only fail never enter the
// log. A validator looks at no key and no configuration; Exec repeats the
// same checks (a command that passes may still fail on the keyspace, e.g.
// WRONGTYPE).

// validators maps a lower-case command name to its syntax check.
var validators = map[string]func(argv [][]byte) *Error{}

// registerValidator adds the syntax check of a command; family files call it
// from init functions next to register.
func registerValidator(name string, v func(argv [][]byte) *Error) {
	if _, dup := validators[name]; dup {
		panic("engine: duplicate validator " + name)
	}
	validators[name] = v
}

// Validate returns the error Exec would certainly return for argv whatever
// the keyspace holds, or nil. now is the proposer's clock (BLOCK timeouts
// are checked against it). Consumer-group commands are checked by
// ValidateGroupCommand.
func Validate(now int64, argv [][]byte) *Error {
	if len(argv) == 0 {
		return ErrSyntax
	}
	var buf [NameBuf]byte
	if v, ok := validators[string(LowerName(&buf, argv[0]))]; ok {
		return v(argv)
	}
	return ValidateGroupCommand(now, argv)
}
