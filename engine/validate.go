package engine

// Leader-side validation: the syntax phase of write commands, run before a
// command is proposed so that commands that can only fail never enter the
// log. A validator looks at no key and no configuration; Exec repeats the
// same checks (a command that passes may still fail on the keyspace, e.g.
// WRONGTYPE).

// registerValidator adds the syntax check of a registered command; family
// files call it from init functions right after register.
func registerValidator(name string, v validator) {
	c, ok := commands[name]
	switch {
	case !ok:
		panic("engine: validator for unregistered command " + name)
	case c.validate != nil:
		panic("engine: duplicate validator " + name)
	}
	c.validate = v
}

// Validate returns the error Exec would certainly return for argv whatever
// the keyspace holds, or nil (also for a command with nothing to check
// before the keyspace). now is the proposer's clock.
func Validate(now int64, argv [][]byte) *Error {
	if len(argv) == 0 {
		return ErrSyntax
	}
	var buf [NameBuf]byte
	if c, ok := commands[string(LowerName(&buf, argv[0]))]; ok && c.validate != nil {
		return c.validate(now, argv)
	}
	return nil
}
