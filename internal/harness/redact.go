package harness

import (
	"slices"
	"strings"
)

// redactedError is an error whose text hides secret values.
type redactedError struct {
	err  error
	text string
}

func (e *redactedError) Error() string { return e.text }

// Unwrap keeps errors.Is working; the wrapped error's own text is never
// shown.
func (e *redactedError) Unwrap() error { return e.err }

// RedactMin is the shortest value RedactEnv hides.
const RedactMin = 4

// RedactEnv hides secret values (a template's environment, sealed at
// rest) in err's text. A CLI may echo its environment in the error it
// answers a handshake or prompt with, and the error becomes the turn's
// detail and goes to the log: neither may show a secret.
//
// Longer values go first, so a value inside another is not left half
// shown. Values shorter than RedactMin are left alone: "1" or "on" is a
// setting, not a credential, and replacing every "1" would make the error
// unreadable ("exit status [redacted]").
func RedactEnv(err error, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	secrets = slices.Clone(secrets)
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	text := err.Error()
	for _, s := range secrets {
		if len(s) >= RedactMin {
			text = strings.ReplaceAll(text, s, "[redacted]")
		}
	}
	return &redactedError{err: err, text: text}
}
