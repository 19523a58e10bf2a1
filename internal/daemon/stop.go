package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// stopStack holds the stop functions of started components, so they stop
// in the reverse of the order they started, on a normal stop and when a
// later component fails to start.
type stopStack struct {
	log   *slog.Logger
	items []stopItem
}

type stopItem struct {
	name string
	stop func(ctx context.Context) error
}

func (s *stopStack) push(name string, stop func(ctx context.Context) error) {
	s.items = append(s.items, stopItem{name: name, stop: stop})
}

// unwind stops every component, newest first, sharing one deadline. A
// component that fails or overruns does not keep the others from stopping.
func (s *stopStack) unwind(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var errs []error
	for i := len(s.items) - 1; i >= 0; i-- {
		it := s.items[i]
		begun := time.Now()
		if err := it.stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", it.name, err))
			continue
		}
		s.log.Debug("stopped", "what", it.name, "took", time.Since(begun))
	}
	s.items = nil
	return errors.Join(errs...)
}
