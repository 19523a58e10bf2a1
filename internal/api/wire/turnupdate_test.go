package wire_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/harness"
)

// jsonNames lists a struct type's JSON field names, recursing into the
// struct (or slice or pointer of struct) fields.
func jsonNames(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name := prefix + f.Tag.Get("json")
		out = append(out, name)
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			out = append(out, jsonNames(ft, name+".")...)
		}
	}
	return out
}

// TestTurnUpdate_mirrorsHarnessUpdate pins the wire's turn update to the
// harness's (the one type a turn's output has from the harness to the
// store): the same JSON fields, and a full update reads back the same.
func TestTurnUpdate_mirrorsHarnessUpdate(t *testing.T) {
	t.Parallel()
	require.Equal(t, jsonNames(reflect.TypeFor[harness.Update](), ""), jsonNames(reflect.TypeFor[wire.TurnUpdate](), ""))
	full := harness.Update{Kind: harness.UpdateToolEnd, Text: "t", ToolCallID: "c1", Title: "Write", ToolKind: "edit", Status: harness.ToolCompleted,
		Plan:  []harness.PlanEntry{{Content: "read", Priority: "high", Status: "completed"}},
		Usage: &harness.Usage{InputTokens: 1, OutputTokens: 2, CachedTokens: 3, ReasoningTokens: 4, CostUSD: 0.5, CostEstimated: true}}
	raw, err := json.Marshal(full)
	require.NoError(t, err)
	var w wire.TurnUpdate
	require.NoError(t, json.Unmarshal(raw, &w))
	back, err := json.Marshal(w)
	require.NoError(t, err)
	require.JSONEq(t, string(raw), string(back))
}
