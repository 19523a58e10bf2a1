package harness

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jamhq/jam/internal/jam"
)

// Registry holds the harnesses by kind. It is filled at start and read
// after, so it needs no lock.
type Registry struct {
	byName map[string]Harness
}

// NewRegistry registers hs; a name given twice panics (a wiring mistake).
func NewRegistry(hs ...Harness) *Registry {
	r := &Registry{byName: map[string]Harness{}}
	for _, h := range hs {
		if _, dup := r.byName[h.Name()]; dup {
			panic("harness: " + h.Name() + " registered twice")
		}
		r.byName[h.Name()] = h
	}
	return r
}

// Names lists the registered kinds, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.byName))
	for n := range r.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Get returns the harness of a kind; jam.ErrInvalid naming the known ones
// when there is none.
func (r *Registry) Get(name string) (Harness, error) {
	if h, ok := r.byName[name]; ok {
		return h, nil
	}
	return nil, fmt.Errorf("%w: harness %q (want %s)", jam.ErrInvalid, name, strings.Join(r.Names(), " or "))
}
