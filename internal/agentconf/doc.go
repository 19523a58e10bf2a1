// Package agentconf holds the use cases of adding and configuring an
// owned agent: it turns what a person asks for (jam agent add's runtime,
// jam agent config's KEY=VALUE settings) into a validated
// store.TemplateConfig, and prepares what a launch of it needs (the
// agent's environment, the check that it can run). internal/daemon wires
// it to the store and the control API.
//
// Invariants:
//   - a configuration it returns names a registered harness (Conf's
//     Registry; "" is acp) and a command: the one given, else the kind's
//     default (harness.Kinds: the CLI on jamd's PATH); acp has no default,
//     and a request without a command for it is jam.ErrInvalid; a builtin
//     kind (demo) refuses a command and stores its arguments alone
//     (demo-agent), never a path: jamd runs its own executable, found at
//     each launch;
//   - every bad input is jam.ErrInvalid with the key it concerns, and
//     never quotes an environment value (it may be a credential);
//   - environment values are sealed with the daemon's key as soon as they
//     arrive, bound to the template and the variable's name, opened only
//     to start the agent (AgentEnv), and never returned: reads list the
//     names;
//   - an agent's environment is an allowlist of jamd's own (PATH, LANG,
//     LC_*, TERM, TZ), its own HOME and TMPDIR, then the template's
//     variables, which win;
//   - a stored configuration read back (Of) and validated again is the
//     same configuration: templates stored before a rule was added keep
//     working (harness acp with its command needs nothing new).
package agentconf
