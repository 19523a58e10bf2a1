package harness_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
)

// TestUpdate_storedForm pins the JSON form of an update: it is how a
// turn's output is stored, so a renamed field or kind would make earlier
// output unreadable.
func TestUpdate_storedForm(t *testing.T) {
	t.Parallel()
	u := harness.Update{Kind: harness.UpdateToolStart, Text: "x", ToolCallID: "c1", Title: "ls", ToolKind: "read", Status: harness.ToolPending,
		Plan: []harness.PlanEntry{{Content: "a", Priority: "high", Status: "done"}}, Usage: &harness.Usage{InputTokens: 1, OutputTokens: 2,
			CachedTokens: 3, ReasoningTokens: 4, CostUSD: 0.25, CostEstimated: true}}
	raw, err := json.Marshal(u)
	require.NoError(t, err)
	require.JSONEq(t, `{"kind":"tool_call","text":"x","tool_call_id":"c1","title":"ls","tool_kind":"read","status":"pending",
		"plan":[{"content":"a","priority":"high","status":"done"}],
		"usage":{"input_tokens":1,"output_tokens":2,"cached_tokens":3,"reasoning_tokens":4,"cost_usd":0.25,"cost_estimated":true}}`, string(raw))
	require.Equal(t, []harness.UpdateKind{"text", "thought", "tool_call", "tool_call_update", "tool_call_end", "plan", "usage"},
		[]harness.UpdateKind{harness.UpdateText, harness.UpdateThinking, harness.UpdateToolStart, harness.UpdateToolUpdate, harness.UpdateToolEnd,
			harness.UpdatePlan, harness.UpdateUsage})
	require.True(t, harness.UpdateText.Coalesces())
	require.False(t, harness.UpdateToolStart.Coalesces())
}

// TestRegistry: a known kind is found; an unknown one is jam.ErrInvalid
// naming the known ones.
func TestRegistry(t *testing.T) {
	t.Parallel()
	r := harness.NewRegistry(named("b"), named("a"))
	require.Equal(t, []string{"a", "b"}, r.Names())
	h, err := r.Get("a")
	require.NoError(t, err)
	require.Equal(t, "a", h.Name())
	_, err = r.Get("codex")
	require.ErrorIs(t, err, jam.ErrInvalid)
	require.EqualError(t, err, `invalid argument: harness "codex" (want a or b)`)
	require.Panics(t, func() { harness.NewRegistry(named("a"), named("a")) })
}

// TestPolicy: the policies answer as their names say, and the LaunchSpec's
// own callback goes first.
func TestPolicy(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	require.Equal(t, harness.AllowOnce, harness.PolicyAllow.Approve(ctx, harness.ApprovalRequest{}))
	require.Equal(t, harness.Reject, harness.PolicyReject.Approve(ctx, harness.ApprovalRequest{}))
	require.Equal(t, harness.Reject, harness.LaunchSpec{}.Approver()(ctx, harness.ApprovalRequest{}), "no policy rejects")
	require.Equal(t, harness.AllowOnce, harness.LaunchSpec{Policy: harness.PolicyAllow}.Approver()(ctx, harness.ApprovalRequest{}))
	spec := harness.LaunchSpec{Policy: harness.PolicyAllow, Approve: func(context.Context, harness.ApprovalRequest) harness.Decision { return harness.Reject }}
	require.Equal(t, harness.Reject, spec.Approver()(ctx, harness.ApprovalRequest{}))
	for _, s := range []string{"allow", "reject"} {
		p, err := harness.ParsePolicy(s)
		require.NoError(t, err)
		require.Equal(t, harness.Policy(s), p)
	}
	for _, s := range []string{"", "maybe", "Allow"} {
		_, err := harness.ParsePolicy(s)
		require.ErrorIs(t, err, jam.ErrInvalid, s)
	}
}

// FuzzParsePolicy: any input is a policy or jam.ErrInvalid.
func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{"allow", "reject", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := harness.ParsePolicy(s)
		if err != nil {
			require.ErrorIs(t, err, jam.ErrInvalid)
			return
		}
		require.Contains(t, harness.Policies, p)
	})
}

type named string

func (n named) Name() string               { return string(n) }
func (n named) Manifest() harness.Manifest { return harness.Manifest{Harness: string(n)} }
func (n named) Launch(context.Context, harness.LaunchSpec) (harness.Process, error) {
	return nil, jam.ErrNotImplemented
}
