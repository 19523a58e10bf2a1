// Package shellwords splits a command line into arguments the way a POSIX
// shell splits words, without expanding anything.
package shellwords

import (
	"fmt"
	"strings"

	"github.com/jamhq/jam/internal/jam"
)

// Split splits a command line into its arguments the way a POSIX
// shell splits words, without expanding anything: blanks separate words,
// single quotes keep everything literally, double quotes keep everything
// but a backslash before ", \, $ or `, and a backslash outside quotes
// keeps the next character. An unterminated quote or a trailing backslash
// is an error, as is a line with no word.
func Split(line string) ([]string, error) {
	var out []string
	var w strings.Builder
	inWord := false
	const (
		plain = iota
		single
		double
	)
	mode := plain
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch mode {
		case single:
			if c == '\'' {
				mode = plain
				continue
			}
			w.WriteByte(c)
		case double:
			switch {
			case c == '"':
				mode = plain
			case c == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0:
				i++
				w.WriteByte(line[i])
			default:
				w.WriteByte(c)
			}
		default:
			switch c {
			case ' ', '\t', '\n':
				if inWord {
					out = append(out, w.String())
					w.Reset()
					inWord = false
				}
				continue
			case '\'':
				mode = single
			case '"':
				mode = double
			case '\\':
				if i+1 >= len(line) {
					return nil, fmt.Errorf("%w: command %q ends with a backslash", jam.ErrInvalid, line)
				}
				i++
				w.WriteByte(line[i])
			default:
				w.WriteByte(c)
			}
			inWord = true
		}
	}
	if mode != plain {
		return nil, fmt.Errorf("%w: command %q has an unterminated quote", jam.ErrInvalid, line)
	}
	if inWord {
		out = append(out, w.String())
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: the command is empty", jam.ErrInvalid)
	}
	return out, nil
}
