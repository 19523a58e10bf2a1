package harness

// StopReason is how a turn ended, in jam's terms; each adapter maps its
// CLI's own vocabulary onto it and keeps the original in
// Outcome.ProviderReason.
type StopReason string

// Stop reasons.
const (
	// StopCompleted: the agent finished its answer.
	StopCompleted StopReason = "completed"
	// StopCancelled: the turn was stopped at jam's request (Prompt's
	// context ended, or Interrupt).
	StopCancelled StopReason = "cancelled"
	// StopFailed: the CLI says the turn failed; the runtime fails the
	// turn (harness_error) and settles nothing.
	StopFailed StopReason = "failed"
	// StopRefused: the model refused.
	StopRefused StopReason = "refused"
	// StopMaxTokens: the answer reached the model's token limit.
	StopMaxTokens StopReason = "max_tokens"
	// StopMaxTurns: the agent reached its limit of model requests.
	StopMaxTurns StopReason = "max_turns"
	// StopOther: a reason the adapter does not know; ProviderReason says
	// it. The answer stands.
	StopOther StopReason = "other"
)

// Outcome is how a turn ended on the CLI's side.
type Outcome struct {
	StopReason StopReason
	// ProviderReason is the CLI's own reason ("end_turn",
	// "error_during_execution", "interrupted").
	ProviderReason string
	// Usage is what the turn used, as far as the CLI reports it; zero
	// when it reports nothing.
	Usage Usage
	// Model is the model that answered, when the CLI says.
	Model string
	// Text is the agent's answer, at most the adapter's bound of it.
	Text string
	// Omitted counts bytes of the answer beyond Text, not kept.
	Omitted int
}

// Reason is the turn's recorded reason: the provider's, else the stop
// reason.
func (o Outcome) Reason() string {
	if o.ProviderReason != "" {
		return o.ProviderReason
	}
	return string(o.StopReason)
}

// Usage is what a turn used. InputTokens counts the input not read from
// cache and CachedTokens the input read from cache (an adapter whose CLI
// counts cached input inside its input subtracts it); OutputTokens counts
// the output, reasoning included, and ReasoningTokens its reasoning part.
// The store keeps them so, and the price table prices them so.
type Usage struct {
	InputTokens     int64 `json:"input_tokens,omitempty"`
	OutputTokens    int64 `json:"output_tokens,omitempty"`
	CachedTokens    int64 `json:"cached_tokens,omitempty"`
	ReasoningTokens int64 `json:"reasoning_tokens,omitempty"`
	// CostUSD is the turn's cost in US dollars; CostEstimated says it was
	// computed from a price table rather than reported by the CLI.
	CostUSD       float64 `json:"cost_usd,omitempty"`
	CostEstimated bool    `json:"cost_estimated,omitempty"`
}

// IsZero reports whether nothing was reported.
func (u Usage) IsZero() bool { return u == Usage{} }
