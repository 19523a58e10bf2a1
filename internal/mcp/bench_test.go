package mcp_test

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/jamhq/jam/internal/mcp"
)

// BenchmarkToolCall is one room_participants call round trip over
// loopback, through the guard, the token check and a stateless SDK
// session.
func BenchmarkToolCall(b *testing.B) {
	bundle := setup(b, mcp.Config{CallsPerSecond: 1e9, Burst: 1 << 30}, nil)
	cs := bundle.connect(b, newSession(), "")
	ctx := context.Background()
	params := &sdk.CallToolParams{Name: mcp.ToolParticipants}
	for b.Loop() {
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatalf("call: %v %v", err, res)
		}
	}
}
