// Package codex drives the OpenAI Codex CLI as a harness.Harness: one
// `codex app-server` process per runtime, spoken to in JSON-RPC 2.0 on its
// stdio, one message per line, without the "jsonrpc" member (the server
// omits it; jam never writes it). The command is the person's (the
// executable and its own options, `-c key=value` say); the adapter appends
// "app-server".
//
// Protocol facts the adapter relies on (Codex 0.171):
//   - handshake: the initialize request (clientInfo jam and its version),
//     whose answer's userAgent names the server, then the initialized
//     notification; requests before it are refused;
//   - thread/start {cwd, model, approvalPolicy, sandbox} opens a thread
//     (thread.id; model is the thread's model); thread/resume {threadId}
//     in a later process makes it live again, its history kept by Codex
//     under CODEX_HOME and sent to the model at the next turn;
//   - turn/start {threadId, input} answers with the turn's id at once; the
//     turn then streams notifications naming thread and turn
//     (item/agentMessage/delta, item/reasoning/*Delta, item/started and
//     item/completed of each item, turn/plan/updated,
//     thread/tokenUsage/updated) and ends with turn/completed, whose
//     status is completed, interrupted or failed (with turn.error);
//   - the completed agentMessage item's text is the answer (the deltas
//     are only its stream);
//   - thread/tokenUsage/updated carries the thread's running total and
//     "last", the usage of the model's last response: one update per
//     response, so a turn's usage is the sum of its updates' last;
//   - turn/interrupt {threadId, turnId} stops a turn, which then ends
//     with turn/completed interrupted;
//   - turn/steer {threadId, input, expectedTurnId} adds input to the
//     running turn (refused for any other turn id); the model gets it
//     with its next request of the turn;
//   - an error notification with willRetry false means Codex gave up on
//     the turn; turn/completed failed follows;
//   - item/commandExecution/requestApproval and
//     item/fileChange/requestApproval are requests from the server that
//     block the turn until answered {decision: accept|decline}; a declined
//     command's item ends "declined" and the model is told it was refused.
//   - thread/start and thread/resume take config, overrides keyed as -c
//     spells them: mcp_servers.NAME {url, http_headers} gives the thread a
//     streamable HTTP MCP server, kept with the thread in this process and
//     written nowhere under CODEX_HOME; its tools are offered to the model
//     in a namespace tool mcp__NAME, and each call made after an
//     mcpServer/elicitation/request whose _meta says codex_approval_kind
//     mcp_tool_call, answered {action: accept|decline}; a declined call is
//     not made and the model is told the user rejected it.
//
// Invariants, beyond the seam's (package harness):
//   - every thread runs with approvalPolicy "untrusted": Codex asks before
//     any command it does not know to be safe, and the one Approval
//     callback (the agent's permission policy) answers accept or decline,
//     under either policy; under "on-request" Codex runs the model's
//     commands unasked;
//   - an MCP tool call's approval goes through the same callback (its
//     title SERVER.TOOL, its item the tool call's); an elicitation that is
//     not an approval is declined at once (jam has no one to ask);
//   - every other request from the server (permissions, user input,
//     dynamic tools, the legacy applyPatchApproval and
//     execCommandApproval, anything unknown) is answered at once with a
//     JSON-RPC error, never left pending to block the turn;
//   - every thread runs with sandbox "danger-full-access": jam's executor
//     is the sandbox. Under jam's bwrap executor Codex and every command it
//     runs are confined to the agent's worktrees and home already. Codex's
//     own "workspace-write" does not work for the native binary started
//     directly, nested or not: each command fails before it runs ("bwrap:
//     execvp codex-linux-sandbox: No such file or directory"), so the model
//     could never run one. Under the local executor, which confines nothing
//     (the agent process itself may do anything its user may), Codex's
//     sandbox would only have kept its tools from what Codex itself can
//     reach;
//   - output reaches a turn's callback only while its Prompt runs, routed
//     by thread and turn id: a notification of a turn that is over is for
//     nobody;
//   - when Prompt's context ends or Interrupt is called, the adapter sends
//     turn/interrupt with the turn id it kept and waits, bounded, for
//     turn/completed; Prompt then returns StopCancelled;
//   - the Outcome's usage is the turn's own (the sum of its updates'
//     last), never the thread's total; Text is at most MaxAnswerBytes of
//     the completed agent messages, the rest counted in Omitted;
//   - unknown notifications, items and fields are ignored; a line that is
//     not JSON-RPC, or longer than jsonrpc.DefaultMaxLine, ends the
//     connection, kills the process group and fails the running turn;
//   - errors hide LaunchSpec.Secrets.
package codex
