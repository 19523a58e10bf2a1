package acp_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness/acp"
	"github.com/jamhq/jam/internal/jam"
)

// modelCases are session/new results (as agents send them) and what
// ChooseModel makes of them for the model "b".
var modelCases = []struct {
	name, raw string
	want      acp.ModelChoice
	wantErr   error
	errText   string
}{
	{name: "config option", raw: `{"sessionId":"s","configOptions":[{"id":"mode","name":"Mode","category":"mode","type":"select","currentValue":"ask","options":[{"value":"ask","name":"Ask"}]},{"id":"model","name":"Model","category":"model","type":"select","currentValue":"a","options":[{"value":"a","name":"A"},{"value":"b","name":"B"}]}]}`,
		want: acp.ModelChoice{Method: acp.MethodSessionSetConfigOption, ConfigID: "model", Offered: []string{"a", "b"}}},
	{name: "config option already current", raw: `{"sessionId":"s","configOptions":[{"id":"m","name":"Model","category":"model","type":"select","currentValue":"b","options":[{"value":"b","name":"B"}]}]}`,
		want: acp.ModelChoice{ConfigID: "m", Offered: []string{"b"}}},
	{name: "grouped values", raw: `{"sessionId":"s","configOptions":[{"id":"model","name":"Model","category":"model","type":"select","currentValue":"a","options":[{"group":"fast","name":"Fast","options":[{"value":"a","name":"A"}]},{"group":"big","name":"Big","options":[{"value":"b","name":"B"}]}]}]}`,
		want: acp.ModelChoice{Method: acp.MethodSessionSetConfigOption, ConfigID: "model", Offered: []string{"a", "b"}}},
	{name: "configId spelling", raw: `{"sessionId":"s","configOptions":[{"configId":"model","name":"Model","category":"model","type":"select","currentValue":"a","options":[{"value":"b","name":"B"}]}]}`,
		want: acp.ModelChoice{Method: acp.MethodSessionSetConfigOption, ConfigID: "model", Offered: []string{"b"}}},
	{name: "config option wins over models", raw: `{"sessionId":"s","configOptions":[{"id":"model","name":"Model","category":"model","type":"select","currentValue":"a","options":[{"value":"b","name":"B"}]}],"models":{"availableModels":[{"modelId":"b","name":"B"}],"currentModelId":"a"}}`,
		want: acp.ModelChoice{Method: acp.MethodSessionSetConfigOption, ConfigID: "model", Offered: []string{"b"}}},
	{name: "models", raw: `{"sessionId":"s","models":{"availableModels":[{"modelId":"a","name":"A"},{"modelId":"b","name":"B"}],"currentModelId":"a"}}`,
		want: acp.ModelChoice{Method: acp.MethodSessionSetModel, Offered: []string{"a", "b"}}},
	{name: "models already current", raw: `{"sessionId":"s","models":{"availableModels":[{"modelId":"b","name":"B"}],"currentModelId":"b"}}`,
		want: acp.ModelChoice{Offered: []string{"b"}}},
	{name: "options without a model category fall back to models", raw: `{"sessionId":"s","configOptions":[{"id":"mode","name":"Mode","category":"mode","type":"select","currentValue":"b","options":[{"value":"b","name":"B"}]}],"models":{"availableModels":[{"modelId":"b","name":"B"}],"currentModelId":"a"}}`,
		want: acp.ModelChoice{Method: acp.MethodSessionSetModel, Offered: []string{"b"}}},
	{name: "a boolean model option is no selector", raw: `{"sessionId":"s","configOptions":[{"id":"model","name":"Model","category":"model","type":"boolean","currentValue":true}]}`,
		wantErr: jam.ErrNotImplemented, errText: `model "b" is configured, but the agent offers no model selection`},
	{name: "unknown model in options", raw: `{"sessionId":"s","configOptions":[{"id":"model","name":"Model","category":"model","type":"select","currentValue":"a","options":[{"value":"a","name":"A"},{"value":"c","name":"C"}]}]}`,
		wantErr: jam.ErrInvalid, errText: `the agent does not offer model "b" (it offers a, c)`},
	{name: "unknown model in models", raw: `{"sessionId":"s","models":{"availableModels":[],"currentModelId":""}}`,
		wantErr: jam.ErrInvalid, errText: `the agent does not offer model "b" (it offers nothing)`},
	{name: "neither", raw: `{"sessionId":"s"}`, wantErr: jam.ErrNotImplemented, errText: "offers no model selection"},
	{name: "nulls", raw: `{"sessionId":"s","configOptions":null,"models":null}`, wantErr: jam.ErrNotImplemented},
	{name: "options not a list", raw: `{"sessionId":"s","configOptions":{"id":"model"}}`, wantErr: jam.ErrInvalid, errText: "configuration options"},
	{name: "values of the wrong shape", raw: `{"sessionId":"s","configOptions":[{"id":"model","name":"Model","category":"model","type":"select","currentValue":"a","options":"b"}]}`,
		wantErr: jam.ErrInvalid, errText: "model option"},
	{name: "models of the wrong shape", raw: `{"sessionId":"s","models":[1]}`, wantErr: jam.ErrInvalid, errText: "models"},
}

func TestChooseModel(t *testing.T) {
	t.Parallel()
	for _, tt := range modelCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var res acp.NewSessionResult
			require.NoError(t, json.Unmarshal([]byte(tt.raw), &res), "a session/new result decodes whatever its options hold")
			got, err := acp.ChooseModel(res.SessionSetup, "b")
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.ErrorContains(t, err, tt.errText)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestChooseModel_longListsAreCut(t *testing.T) {
	t.Parallel()
	var ms acp.ModelState
	for i := range 25 {
		ms.AvailableModels = append(ms.AvailableModels, acp.ModelInfo{ModelID: string(rune('a' + i))})
	}
	raw, err := json.Marshal(ms)
	require.NoError(t, err)
	_, err = acp.ChooseModel(acp.SessionSetup{Models: raw}, "zz")
	require.ErrorContains(t, err, "(it offers a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t and 5 more)")
}

// FuzzChooseModel feeds session/new results: decoding and choosing never
// panic, an error is always classified, and a choice always names a model
// the agent offers.
func FuzzChooseModel(f *testing.F) {
	for _, tt := range modelCases {
		f.Add([]byte(tt.raw), "b")
	}
	f.Fuzz(func(t *testing.T, raw []byte, model string) {
		var res acp.NewSessionResult
		if json.Unmarshal(raw, &res) != nil || model == "" {
			return
		}
		got, err := acp.ChooseModel(res.SessionSetup, model)
		if err != nil {
			if !errorIsOne(err, jam.ErrInvalid, jam.ErrNotImplemented) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		found := false
		for _, m := range got.Offered {
			found = found || m == model
		}
		if !found {
			t.Fatalf("chose %q, which is not offered: %+v", model, got)
		}
		if got.Method == acp.MethodSessionSetConfigOption && got.ConfigID == "" {
			t.Fatalf("set_config_option without an option id: %+v", got)
		}
	})
}

func errorIsOne(err error, targets ...error) bool {
	for _, target := range targets {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}
