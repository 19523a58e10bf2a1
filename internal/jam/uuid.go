package jam

import "fmt"

// IdentityID is a Band user's or agent's UUID: the only key for matching a
// sender, participant, mention or cost.
type IdentityID string

// RoomID is a Band chat room's UUID.
type RoomID string

// PlatformMessageID is the UUID Band gives a room message. jam's own
// accepted messages have a [MessageID] instead.
type PlatformMessageID string

// UUID is the constraint satisfied by the Band UUID types.
type UUID interface {
	~string
	uuidKind() string
}

func (IdentityID) uuidKind() string        { return "identity id" }
func (RoomID) uuidKind() string            { return "room id" }
func (PlatformMessageID) uuidKind() string { return "message id" }

// ParseUUID parses s as a Band UUID of type T in the canonical 8-4-4-4-12
// hexadecimal form, in either case, and returns it in lower case.
func ParseUUID[T UUID](s string) (T, error) {
	var zero T
	if len(s) != 36 {
		return zero, fmt.Errorf("%w: %s %q is not a UUID (want 36 characters, got %d)", ErrInvalid, zero.uuidKind(), clip(s), len(s))
	}
	out := []byte(s)
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return zero, fmt.Errorf("%w: %s %q is not a UUID (want '-' at offset %d)", ErrInvalid, zero.uuidKind(), clip(s), i)
			}
			continue
		}
		switch {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		case 'A' <= c && c <= 'F':
			out[i] = c + ('a' - 'A')
		default:
			return zero, fmt.Errorf("%w: %s %q is not a UUID (%q at offset %d is not hexadecimal)", ErrInvalid, zero.uuidKind(), clip(s), c, i)
		}
	}
	return T(out), nil
}

// unmarshalUUID decodes an empty string as the zero (absent) ID.
func unmarshalUUID[T UUID](dst *T, text []byte) error {
	if len(text) == 0 {
		*dst = ""
		return nil
	}
	id, err := ParseUUID[T](string(text))
	if err != nil {
		return err
	}
	*dst = id
	return nil
}

func (id *IdentityID) UnmarshalText(b []byte) error { return unmarshalUUID(id, b) }
func (id *RoomID) UnmarshalText(b []byte) error     { return unmarshalUUID(id, b) }

// UnmarshalText accepts a Band message UUID or a local notice id.
func (id *PlatformMessageID) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*id = ""
		return nil
	}
	v, err := ParseMessageID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}
