package harness

import "slices"

// Kind is a harness kind as a person names it (jam agent add --harness),
// with the command that runs its CLI when they give none. The adapter of a
// kind adds its own protocol arguments to the command (copilot --acp,
// codex app-server), so a command names the CLI's executable and the
// person's own options only.
type Kind struct {
	// Name is the harness configuration key's value, and the name the
	// kind's Harness registers under.
	Name string
	// Command is the default command: the CLI, found on jamd's PATH. Nil
	// when the kind needs a command given (acp: any ACP agent).
	Command []string
	// CLI and Install name the program and how to install it, for the
	// error a missing executable gives.
	CLI, Install string
	// Builtin, when set, are the arguments to jamd's own executable that
	// run the kind (demo: demo-agent). Such a kind takes no command and
	// stores these arguments alone: jamd resolves its executable at each
	// launch (BuiltinCommand), so a stored agent never names a path that a
	// rebuild or a cleaned build cache removes.
	Builtin []string
}

// Kinds are the harness kinds, in the order help lists them. The table is
// keyed by name, so an adapter registered under one of these names gets
// its default command without knowing of it.
var Kinds = []Kind{
	{Name: "claude", Command: []string{"claude"}, CLI: "Claude Code", Install: "npm install -g @anthropic-ai/claude-code"},
	{Name: "codex", Command: []string{"codex"}, CLI: "Codex", Install: "npm install -g @openai/codex"},
	{Name: "copilot", Command: []string{"copilot"}, CLI: "the GitHub Copilot CLI", Install: "npm install -g @github/copilot"},
	{Name: "opencode", Command: []string{"opencode"}, CLI: "OpenCode", Install: "npm install -g opencode-ai"},
	{Name: "acp", CLI: "an ACP agent"},
	{Name: "demo", CLI: "jam's demo agent", Builtin: []string{"demo-agent"}},
}

// KindOf is the kind of a name; false for a name the table lacks.
func KindOf(name string) (Kind, bool) {
	i := slices.IndexFunc(Kinds, func(k Kind) bool { return k.Name == name })
	if i < 0 {
		return Kind{}, false
	}
	return Kinds[i], true
}

// BuiltinCommand is the command of a builtin kind: exe, jamd's own
// executable as found now, with the kind's arguments; nil for any other
// kind.
func BuiltinCommand(name, exe string) []string {
	k, _ := KindOf(name)
	if k.Builtin == nil {
		return nil
	}
	return append([]string{exe}, k.Builtin...)
}

// DefaultCommand is the command of a harness kind when none is given; nil
// when the kind has none.
func DefaultCommand(name string) []string {
	k, _ := KindOf(name)
	return slices.Clone(k.Command)
}
