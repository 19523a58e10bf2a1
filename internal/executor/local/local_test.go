package local_test

import (
	"testing"

	"github.com/jamhq/jam/internal/executor/executortest"
	"github.com/jamhq/jam/internal/executor/local"
)

func TestExercise(t *testing.T) { executortest.Exercise(t, local.New()) }
