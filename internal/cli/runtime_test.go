package cli_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/jamhq/jam/internal/api/wire"
)

func TestOwnedRuntimeCommands(t *testing.T) {
	t.Parallel()
	runCases(t, []cmdCase{
		{
			name: "agent add --command splits like a shell",
			backend: backend{AgentAddFunc: func(_ context.Context, r wire.AgentAddRequest) (wire.Agent, error) {
				assert.Equal(t, &wire.AgentRuntime{Harness: "acp", Command: []string{"opencode", "acp", "--model", "a b"}, Repo: "/src/app", Placement: "dedicated", Permission: "allow"}, r.Runtime)
				return wire.Agent{Name: r.Name, Handle: "owner/coder", Peer: "local/coder"}, nil
			}},
			inv:        invocation{args: []string{"agent", "add", "coder", "--command", `opencode acp --model "a b"`, "--repo", "/src/app", "--placement", "dedicated", "--permission", "allow"}},
			wantStdout: "added agent coder: handle owner/coder, peer local/coder\n",
		},
		{
			name:       "agent add --command with an open quote",
			inv:        invocation{args: []string{"agent", "add", "coder", "--command", `opencode "acp`}},
			wantCode:   2,
			wantStderr: "jam: --command: invalid argument: command \"opencode \\\"acp\" has an unterminated quote\n",
		},
		{
			name: "agent config",
			backend: backend{AgentConfigFunc: func(_ context.Context, a string, r wire.AgentConfigRequest) (wire.AgentRuntimeStatus, error) {
				assert.Equal(t, "coder", a)
				assert.Equal(t, map[string]string{"model": "m2", "permission": "allow"}, r.Set)
				return wire.AgentRuntimeStatus{DesiredGeneration: 3, EffectiveGeneration: 1, PendingChange: "model=m2, permission=allow"}, nil
			}},
			inv:        invocation{args: []string{"agent", "config", "coder", "model=m2", "permission=allow"}},
			wantStdout: "desired generation 3, effective 1; pending: model=m2, permission=allow\n",
		},
		{
			name:       "agent config without =",
			inv:        invocation{args: []string{"agent", "config", "coder", "model"}},
			wantCode:   2,
			wantStderr: "jam: \"model\" is not KEY=VALUE\n",
		},
		{
			name: "session list",
			backend: backend{SessionsFunc: func(context.Context) ([]wire.Session, error) {
				return []wire.Session{{ID: "sess_1", Agent: "local/demo", Room: "r1", Lifecycle: "open", Worktree: "/w/sess_1"}}, nil
			}},
			inv:        invocation{args: []string{"session", "list"}},
			wantStdout: "SESSION  AGENT       ROOM  STATE  WORKTREE\nsess_1   local/demo  r1    open   /w/sess_1\n",
		},
		{
			name: "turn list",
			backend: backend{TurnsFunc: func(_ context.Context, s string) ([]wire.Turn, error) {
				assert.Equal(t, "sess_1", s)
				return []wire.Turn{{ID: "turn_1", Seq: 1, State: "succeeded", Reason: "end_turn", Message: "m1", LeaseGeneration: 2}}, nil
			}},
			inv:        invocation{args: []string{"turn", "list", "sess_1"}},
			wantStdout: "SEQ  TURN    STATE      REASON    MESSAGE  LEASE GEN\n1    turn_1  succeeded  end_turn  m1       2\n",
		},
		{
			name: "turn list with why a turn failed",
			backend: backend{TurnsFunc: func(context.Context, string) ([]wire.Turn, error) {
				return []wire.Turn{
					{ID: "turn_1", Seq: 1, State: "failed", Reason: "harness_error", Detail: "start agent local/demo: acp: start no-such-agent:\texec: \"no-such-agent\": executable file not found in $PATH\nsecond line"},
					{ID: "turn_2", Seq: 2, State: "succeeded", Reason: "end_turn", LeaseGeneration: 1},
				}, nil
			}},
			inv: invocation{args: []string{"turn", "list", "sess_1"}},
			wantStdout: "SEQ  TURN    STATE      REASON         MESSAGE  LEASE GEN  WHY\n" +
				"1    turn_1  failed     harness_error           0          start agent local/demo: acp: start no-such-agent: exec: \"no…\n" +
				"2    turn_2  succeeded  end_turn                1          \n",
		},
		{
			name: "turn show of a failed turn says why",
			backend: backend{
				SessionsFunc: func(context.Context) ([]wire.Session, error) {
					return []wire.Session{{ID: "sess_1", Agent: "local/demo", Room: "r1"}}, nil
				},
				TurnFunc: func(context.Context, string) (wire.Turn, error) {
					return wire.Turn{ID: "turn_1", Seq: 1, State: "failed", Reason: "harness_error", Session: "sess_1",
						Detail: "start agent local/demo: acp: initialize: context deadline exceeded\nafter 2m0s"}, nil
				},
				TurnOutputFunc: func(context.Context, string) (wire.TurnOutput, error) { return wire.TurnOutput{}, nil },
			},
			inv: invocation{args: []string{"turn", "show", "turn_1"}},
			wantStdout: "turn turn_1 (#1 of sess_1, local/demo in room r1): failed (harness_error)\n" +
				"why: start agent local/demo: acp: initialize: context deadline exceeded\n     after 2m0s\n" +
				"no output kept (the turn streamed nothing, or ran before the daemon stored output)\n",
		},
		{
			name: "turn cancel",
			backend: backend{CancelTurnFunc: func(_ context.Context, turn string) error {
				assert.Equal(t, "turn_1", turn)
				return nil
			}},
			inv:        invocation{args: []string{"turn", "cancel", "turn_1"}},
			wantStdout: "cancelling turn_1\n",
		},
		{
			name: "session show",
			backend: backend{
				SessionsFunc: func(context.Context) ([]wire.Session, error) {
					return []wire.Session{{ID: "sess_0"}, {ID: "sess_1", Agent: "local/demo", Room: "r1", Lifecycle: "open", Worktree: "/w/sess_1", WorktreeState: "active",
						Branch: "jam/sess_1", ProviderThread: "t-9", CurrentTurn: "turn_2", CurrentTurnState: "running", Created: time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)}}, nil
				},
				TurnsFunc: func(_ context.Context, s string) ([]wire.Turn, error) {
					assert.Equal(t, "sess_1", s)
					return []wire.Turn{{ID: "turn_2", Seq: 2, State: "running", LeaseGeneration: 1}}, nil
				},
			},
			inv: invocation{args: []string{"session", "show", "sess_1"}},
			wantStdout: "session        sess_1\nagent          local/demo\nroom           r1\nstate          open\nworktree       /w/sess_1 active\n" +
				"branch         jam/sess_1\nagent session  t-9\ncurrent turn   turn_2 running\ncreated        2026-11-30 06:00:00\n\n" +
				"SEQ  TURN    STATE    REASON  MESSAGE  LEASE GEN\n2    turn_2  running                   1\n",
		},
		{
			name:       "session show of an unknown session",
			backend:    backend{SessionsFunc: func(context.Context) ([]wire.Session, error) { return nil, nil }},
			inv:        invocation{args: []string{"session", "show", "sess_9"}},
			wantCode:   4,
			wantStderr: "jam: not found: no session \"sess_9\"\n",
		},
		{
			name: "turn show",
			backend: backend{
				SessionsFunc: func(context.Context) ([]wire.Session, error) {
					return []wire.Session{{ID: "sess_1", Agent: "local/demo", Room: "r1"}}, nil
				},
				TurnFunc: func(_ context.Context, turn string) (wire.Turn, error) {
					assert.Equal(t, "turn_1", turn)
					at := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
					return wire.Turn{ID: "turn_1", Seq: 1, State: "succeeded", Reason: "end_turn", Message: "m1", Session: "sess_1",
						Executions: []wire.Execution{{ID: "exec_1", Lease: "lease_2", LeaseGeneration: 2, Pid: 4242, State: "ended", Outcome: "succeeded", Reason: "end_turn",
							Started: at, Ended: at.Add(3 * time.Second)}}}, nil
				},
				TurnOutputFunc: func(_ context.Context, turn string) (wire.TurnOutput, error) {
					assert.Equal(t, "turn_1", turn)
					return wire.TurnOutput{Turn: turn, Kept: true, Batches: 3, Updates: []wire.TurnUpdate{
						{Kind: "thought", Text: "hmm "}, {Kind: "thought", Text: "ok"},
						{Kind: "tool_call", ToolCallID: "c1", Title: "write NOTES.md", Status: "completed"},
						{Kind: "text", Text: "You said: "}, {Kind: "text", Text: "hi"},
					}}, nil
				},
			},
			inv: invocation{args: []string{"turn", "show", "turn_1"}},
			wantStdout: "turn turn_1 (#1 of sess_1, local/demo in room r1): succeeded (end_turn)\nanswers message m1\n\n" +
				"EXECUTION  LEASE    GEN  PID   STARTED              ENDED                OUTCOME    REASON\n" +
				"exec_1     lease_2  2    4242  2026-11-30 06:00:00  2026-11-30 06:00:03  succeeded  end_turn\n\n" +
				"\n[thinking]\nhmm ok\n[tool] c1 write NOTES.md completed\n\n[answer]\nYou said: hi\n",
		},
	})
}
