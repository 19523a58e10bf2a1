package cli_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

var pendingApproval = wire.Approval{ID: "appr_01", Session: "sess_01", Turn: "turn_01", Agent: "@owner/demo", Room: "room-1",
	Title: "Write NOTES.md", ToolKind: "edit", Created: time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC), Deadline: time.Now().Add(time.Hour)}

func TestApproveCommands(t *testing.T) {
	t.Parallel()
	runCases(t, []cmdCase{
		{
			name:       "approvals, none",
			backend:    backend{ApprovalFuncs: apitest.ApprovalFuncs{ApprovalsFunc: func(context.Context) ([]wire.Approval, error) { return nil, nil }}},
			inv:        invocation{args: []string{"approvals"}},
			wantStdout: "no agent is waiting for an answer\n",
		},
		{
			name: "approve always",
			backend: backend{ApprovalFuncs: apitest.ApprovalFuncs{ApproveFunc: func(_ context.Context, id string, r wire.ApproveRequest) (wire.ApprovalAnswer, error) {
				assert.Equal(t, "appr_01", id)
				assert.Equal(t, wire.ApproveRequest{Decision: "always"}, r)
				return wire.ApprovalAnswer{Approval: pendingApproval, Decision: "always", By: "owner"}, nil
			}}},
			inv:        invocation{args: []string{"approve", "appr_01", "always"}},
			wantStdout: "appr_01: @owner/demo may from now on in this session Write NOTES.md\n",
		},
		{
			name: "approve, answered already",
			backend: backend{ApprovalFuncs: apitest.ApprovalFuncs{ApproveFunc: func(context.Context, string, wire.ApproveRequest) (wire.ApprovalAnswer, error) {
				return wire.ApprovalAnswer{}, fmt.Errorf("%w: approval appr_01 was already answered: deny by owner", jam.ErrConflict)
			}}},
			inv:        invocation{args: []string{"approve", "appr_01", "allow"}},
			wantCode:   5,
			wantStderr: "jam: approval appr_01: conflict: approval appr_01 was already answered: deny by owner (conflict)\n",
		},
		{
			name:       "approve needs a decision",
			inv:        invocation{args: []string{"approve", "appr_01"}},
			wantCode:   2,
			wantStderr: "jam: accepts 2 arg(s), received 1 (see jam approve --help)\n",
		},
	})
}
