package arch

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func writeFile(path, src string) error { return os.WriteFile(path, []byte(src), 0o600) }
