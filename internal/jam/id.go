package jam

import (
	"crypto/rand"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// idBodyLen is the length of the encoded part of a minted ID: 128 bits in
// Crockford base32.
const idBodyLen = 26

// crockford is the Crockford base32 alphabet, lower-cased. Lower-case
// encodings sort in the same order as the upper-case ones because every
// digit sorts before every letter in both.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// WorkspaceID identifies a workspace, the tenancy boundary ("ws_").
type WorkspaceID string

// AccountID identifies one signed-in Band account ("acct_").
type AccountID string

// BindingID identifies one runtime session bound to one room ("bind_").
type BindingID string

// TemplateID identifies a runtime template ("tmpl_").
type TemplateID string

// SessionID identifies one agent runtime session ("sess_").
type SessionID string

// MessageID identifies an accepted message to a session ("msg_"). A Band
// message has a [PlatformMessageID] instead.
type MessageID string

// TurnID identifies one accepted work request ("turn_").
type TurnID string

// ExecutionID identifies one attempt of a turn on a lease ("exec_").
type ExecutionID string

// LeaseID identifies an executor lease ("lease_").
type LeaseID string

// WorktreeID identifies a session's worktree ("wt_").
type WorktreeID string

// SnapshotID identifies an immutable snapshot manifest ("snap_").
type SnapshotID string

// ChangeSetID identifies an immutable captured change set ("cs_").
type ChangeSetID string

// DeliveryID identifies the delivery of one change set to one target ("dlv_").
type DeliveryID string

// DelegationID identifies a parent's delegation to a child session ("del_").
type DelegationID string

// ConnectionID identifies one external authority's credentials ("con_").
type ConnectionID string

// JobID identifies a durable internal continuation ("job_").
type JobID string

// OperationID identifies a user-visible long-running operation ("op_").
type OperationID string

// ApprovalID identifies a question an agent's turn asks the person ("appr_").
type ApprovalID string

// Prefix returns the ID prefix of the type, including the underscore.
func (WorkspaceID) Prefix() string  { return "ws_" }
func (AccountID) Prefix() string    { return "acct_" }
func (BindingID) Prefix() string    { return "bind_" }
func (TemplateID) Prefix() string   { return "tmpl_" }
func (SessionID) Prefix() string    { return "sess_" }
func (MessageID) Prefix() string    { return "msg_" }
func (TurnID) Prefix() string       { return "turn_" }
func (ExecutionID) Prefix() string  { return "exec_" }
func (LeaseID) Prefix() string      { return "lease_" }
func (WorktreeID) Prefix() string   { return "wt_" }
func (SnapshotID) Prefix() string   { return "snap_" }
func (ChangeSetID) Prefix() string  { return "cs_" }
func (DeliveryID) Prefix() string   { return "dlv_" }
func (DelegationID) Prefix() string { return "del_" }
func (ConnectionID) Prefix() string { return "con_" }
func (JobID) Prefix() string        { return "job_" }
func (OperationID) Prefix() string  { return "op_" }
func (ApprovalID) Prefix() string   { return "appr_" }

// ID is the constraint satisfied by every jam-minted identifier type.
type ID interface {
	~string
	Prefix() string
}

// ParseID parses s as an ID of type T. It rejects a missing or wrong prefix
// and a malformed body with an error wrapping [ErrInvalid].
func ParseID[T ID](s string) (T, error) {
	var zero T
	prefix := zero.Prefix()
	body, ok := strings.CutPrefix(s, prefix)
	if !ok {
		if i := strings.IndexByte(s, '_'); i > 0 && i < 8 {
			return zero, fmt.Errorf("%w: id %q has prefix %q, want %q", ErrInvalid, clip(s), s[:i+1], prefix)
		}
		return zero, fmt.Errorf("%w: id %q lacks the prefix %q", ErrInvalid, clip(s), prefix)
	}
	if len(body) != idBodyLen {
		return zero, fmt.Errorf("%w: id %q: want %d characters after %q, got %d", ErrInvalid, clip(s), idBodyLen, prefix, len(body))
	}
	for i := 0; i < len(body); i++ {
		if strings.IndexByte(crockford, body[i]) < 0 {
			return zero, fmt.Errorf("%w: id %q: character %q is not lower-case Crockford base32", ErrInvalid, clip(s), body[i])
		}
	}
	// The first character carries only the top 3 bits of the 48-bit time.
	if body[0] > '7' {
		return zero, fmt.Errorf("%w: id %q: value overflows 128 bits", ErrInvalid, clip(s))
	}
	return T(s), nil
}

// MustParseID is ParseID for constants in tests and tables; it panics on error.
func MustParseID[T ID](s string) T {
	id, err := ParseID[T](s)
	if err != nil {
		panic(err)
	}
	return id
}

// IDTime returns the millisecond timestamp encoded in a well-formed ID.
func IDTime[T ID](id T) (time.Time, error) {
	if _, err := ParseID[T](string(id)); err != nil {
		return time.Time{}, err
	}
	body := string(id)[len(id.Prefix()):]
	var ms uint64
	for i := 0; i < 10; i++ {
		ms = ms<<5 | uint64(strings.IndexByte(crockford, body[i]))
	}
	return time.UnixMilli(int64(ms)).UTC(), nil
}

// clip bounds user input quoted in error messages.
func clip(s string) string {
	const limit = 64
	if len(s) > limit {
		return s[:limit] + "…"
	}
	return s
}

// Minter mints IDs. IDs minted by one Minter sort in minting order: within
// one millisecond the entropy is incremented rather than redrawn.
// A Minter is safe for concurrent use.
type Minter struct {
	now     func() time.Time
	entropy io.Reader

	mu     sync.Mutex
	lastMs uint64   // guarded by mu
	last   [10]byte // guarded by mu: the 80 entropy bits of the last ID
}

// NewMinter returns a Minter reading the clock from now and randomness from
// entropy. Nil arguments select time.Now and crypto/rand.
func NewMinter(now func() time.Time, entropy io.Reader) *Minter {
	if now == nil {
		now = time.Now
	}
	if entropy == nil {
		entropy = rand.Reader
	}
	return &Minter{now: now, entropy: entropy}
}

// New mints a fresh ID of type T.
func New[T ID](m *Minter) T {
	var zero T
	return T(zero.Prefix() + m.next())
}

func (m *Minter) next() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := uint64(m.now().UnixMilli()) & (1<<48 - 1)
	if ms <= m.lastMs && m.lastMs != 0 {
		// Same millisecond, or the clock went backwards: keep the last
		// timestamp and increment the entropy so order is preserved.
		ms = m.lastMs
		for i := len(m.last) - 1; i >= 0; i-- {
			m.last[i]++
			if m.last[i] != 0 {
				break
			}
		}
	} else if _, err := io.ReadFull(m.entropy, m.last[:]); err != nil {
		// crypto/rand does not fail on supported platforms; a custom
		// reader that fails is a programming error.
		panic(fmt.Sprintf("jam: read entropy: %v", err))
	}
	m.lastMs = ms
	var raw [16]byte
	raw[0], raw[1], raw[2], raw[3], raw[4], raw[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	copy(raw[6:], m.last[:])
	return encode128(raw)
}

// encode128 writes 128 bits as 26 Crockford base32 characters, most
// significant first (the first character carries 3 bits).
func encode128(raw [16]byte) string {
	var out [idBodyLen]byte
	var acc uint32
	var bits uint
	// Prepend two zero bits so 130 bits split evenly into 26 groups of 5.
	n := 0
	bits = 2
	for _, b := range raw {
		acc = acc<<8 | uint32(b)
		bits += 8
		for bits >= 5 {
			bits -= 5
			out[n] = crockford[(acc>>bits)&31]
			n++
		}
	}
	return string(out[:])
}
