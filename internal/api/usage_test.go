package api

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

func TestParseSince(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 3, 0, 0, 0, time.FixedZone("X", 3600))
	tests := []struct {
		in   string
		want time.Time
		err  string
	}{
		{in: "", want: time.Time{}},
		{in: "24h", want: time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)},
		{in: "90m", want: time.Date(2026, 11, 30, 0, 30, 0, 0, time.UTC)},
		{in: "7d", want: time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)},
		{in: "2026-03-14", want: time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)},
		{in: "2026-03-14T10:00:00+02:00", want: time.Date(2026, 3, 14, 8, 0, 0, 0, time.UTC)},
		{in: "0d", err: "number of days"},
		{in: "36501d", err: "number of days"},
		{in: "99999999999999999999d", err: "number of days"},
		{in: "-1h", err: "positive duration"},
		{in: "0s", err: "positive duration"},
		{in: "900000h", err: "positive duration"},
		{in: "d", err: "not a duration"},
		{in: "yesterday", err: "not a duration"},
		{in: "2026-13-01", err: "not a duration"},
		{in: "7 d", err: "not a duration"},
	}
	for _, tt := range tests {
		got, err := ParseSince(tt.in, now)
		if tt.err != "" {
			require.ErrorIs(t, err, jam.ErrInvalid, tt.in)
			require.ErrorContains(t, err, tt.err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		require.True(t, tt.want.Equal(got), "%s: want %s, got %s", tt.in, tt.want, got)
		if !got.IsZero() {
			require.Equal(t, time.UTC, got.Location())
		}
	}
}

func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"", "24h", "7d", "2026-03-14", "2026-03-14T10:00:00Z", "-5m", "1e9d"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSince(s, now)
		if err != nil {
			require.ErrorIs(t, err, jam.ErrInvalid)
			return
		}
		if s != "" && !got.IsZero() && got.Location() != time.UTC {
			t.Fatalf("%q: %s is not UTC", s, got)
		}
	})
}

func TestUsageRoute(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []wire.UsageRequest
	backend := fakeBackend{UsageFunc: func(_ context.Context, r wire.UsageRequest) (wire.UsageReport, error) {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
		if r.By == wire.UsageBySession {
			return wire.UsageReport{By: r.By}, nil
		}
		return wire.UsageReport{By: r.By, Since: r.Since, Rows: []wire.UsageRow{{Key: "local/demo", Name: "Demo",
			UsageSum: wire.UsageSum{Turns: 2, InputTokens: 10, OutputTokens: 3, CostMicros: 1500, Costed: 1, Estimated: 1, Unpriced: 1}}},
			Total: wire.UsageSum{Turns: 2, InputTokens: 10, OutputTokens: 3, CostMicros: 1500, Costed: 1, Estimated: 1, Unpriced: 1}}, nil
	}}
	cases := []struct {
		name, path string
		wantStatus int
		wantBody   string
	}{
		{name: "by agent by default", path: "/v1/usage", wantStatus: 200,
			wantBody: `{"by":"agent","rows":[{"key":"local/demo","name":"Demo","turns":2,"input_tokens":10,"output_tokens":3,"cached_tokens":0,"reasoning_tokens":0,"cost_micros":1500,"costed":1,"estimated":1,"unpriced":1}],
"total":{"turns":2,"input_tokens":10,"output_tokens":3,"cached_tokens":0,"reasoning_tokens":0,"cost_micros":1500,"costed":1,"estimated":1,"unpriced":1}}`},
		{name: "since a date", path: "/v1/usage?by=room&since=2026-03-14", wantStatus: 200,
			wantBody: `{"by":"room","since":"2026-03-14T00:00:00Z","rows":[{"key":"local/demo","name":"Demo","turns":2,"input_tokens":10,"output_tokens":3,"cached_tokens":0,"reasoning_tokens":0,"cost_micros":1500,"costed":1,"estimated":1,"unpriced":1}],
"total":{"turns":2,"input_tokens":10,"output_tokens":3,"cached_tokens":0,"reasoning_tokens":0,"cost_micros":1500,"costed":1,"estimated":1,"unpriced":1}}`},
		{name: "no rows is an empty list", path: "/v1/usage?by=session", wantStatus: 200,
			wantBody: `{"by":"session","rows":[],"total":{"turns":0,"input_tokens":0,"output_tokens":0,"cached_tokens":0,"reasoning_tokens":0,"cost_micros":0,"costed":0,"estimated":0,"unpriced":0}}`},
		{name: "bad grouping", path: "/v1/usage?by=model", wantStatus: 400,
			wantBody: `{"error":{"code":"invalid_argument","message":"invalid argument: by \"model\" (want agent, room, session or day)"}}`},
		{name: "bad since", path: "/v1/usage?since=yesterday", wantStatus: 400,
			wantBody: `{"error":{"code":"invalid_argument","message":"invalid argument: since \"yesterday\": not a duration, a date or a time (want a duration like 24h or 7d, a date like 2026-03-14, or an RFC 3339 time)"}}`},
		{name: "unknown parameter", path: "/v1/usage?group=room", wantStatus: 400,
			wantBody: `{"error":{"code":"invalid_argument","message":"unknown query parameter \"group\" (known: by, since)"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t, backend, "")
			status, _, body := call(t, b, "GET", tc.path, "")
			require.Equal(t, tc.wantStatus, status, body)
			assert.JSONEq(t, tc.wantBody, body)
		})
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 3, "refused requests never reach the backend")
	require.Equal(t, wire.UsageRequest{By: wire.UsageByAgent}, seen[0])
}
