package wire

import "time"

// ExecutionUsage is what one attempt of a turn used, as its end recorded
// it. Input counts the input tokens not read from cache, Cached those read
// from cache, Output the output (reasoning included), Reasoning the
// reasoning part of the output. CostMicros is the cost in millionths of a
// US dollar, null when unknown (the agent reported none and the model has
// no price in the price table), which is not zero; CostEstimated says jam
// computed it from its price table rather than the agent reporting it.
type ExecutionUsage struct {
	InputTokens     int64  `json:"input_tokens"`
	OutputTokens    int64  `json:"output_tokens"`
	CachedTokens    int64  `json:"cached_tokens"`
	ReasoningTokens int64  `json:"reasoning_tokens"`
	CostMicros      *int64 `json:"cost_micros"`
	CostEstimated   bool   `json:"cost_estimated,omitempty"`
	Model           string `json:"model,omitempty"`
}

// Usage groupings (UsageReport.By).
const (
	UsageByAgent   = "agent"
	UsageByRoom    = "room"
	UsageBySession = "session"
	UsageByDay     = "day"
)

// UsageReport is the body of GET /v1/usage?by=…&since=…: the usage of the
// turns that started since Since (zero: all), one row per agent, room,
// session or UTC day, in key order, at most 1000 rows (Truncated says
// there were more; Total covers them all).
type UsageReport struct {
	By        string     `json:"by"`
	Since     time.Time  `json:"since,omitzero"`
	Rows      []UsageRow `json:"rows"`
	Total     UsageSum   `json:"total"`
	Truncated bool       `json:"truncated,omitempty"`
}

// UsageRow is one group of a usage report. Key is the agent's peer
// ("profile/scope"), the room's id, the session's id, or the day
// (YYYY-MM-DD, UTC); Name is the agent's name for an agent row.
type UsageRow struct {
	Key  string `json:"key"`
	Name string `json:"name,omitempty"`
	UsageSum
}

// UsageSum sums the usage of turns. CostMicros sums the known costs, in
// millionths of a US dollar; Costed counts the turn attempts with a known
// cost, Estimated those whose cost jam estimated, Unpriced those that
// reported tokens but have no known cost (not counted in CostMicros).
type UsageSum struct {
	Turns           int64 `json:"turns"`
	InputTokens     int64 `json:"input_tokens"`
	OutputTokens    int64 `json:"output_tokens"`
	CachedTokens    int64 `json:"cached_tokens"`
	ReasoningTokens int64 `json:"reasoning_tokens"`
	CostMicros      int64 `json:"cost_micros"`
	Costed          int64 `json:"costed"`
	Estimated       int64 `json:"estimated"`
	Unpriced        int64 `json:"unpriced"`
}

// UsageRequest asks for a usage report: By is a grouping, Since the
// earliest start of the turns it sums (zero: all).
type UsageRequest struct {
	By    string
	Since time.Time
}
