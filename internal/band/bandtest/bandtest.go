package bandtest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// env is one fresh environment of a scenario: a target, its owner, and the
// OpenAPI document when there is one.
type env struct {
	*Fixture
	oas *openAPI
}

// Exercise runs the conformance suite against the server target returns.
// Each subtest that needs isolation calls target for a fresh environment.
func Exercise(t *testing.T, target func(t *testing.T) Target) {
	t.Helper()
	var oas *openAPI
	var oasErr error
	path := findOpenAPI()
	if path != "" {
		oas, oasErr = loadOpenAPI(path)
	}
	if oas != nil {
		// Runs after every subtest, parallel ones included.
		t.Cleanup(func() { t.Log("OpenAPI: " + oas.summary()) })
	}
	newEnv := func(t *testing.T) *env {
		t.Helper()
		tg := target(t)
		return &env{Fixture: newFixture(t, tg, oas), oas: oas}
	}

	t.Run("OpenAPIDocument", func(t *testing.T) {
		t.Parallel()
		if path == "" {
			t.Skipf("Band's OpenAPI document is absent (looked for $%s and ../shared/docs/band/openapi.json from the module root); responses are not validated", openAPIEnv)
		}
		require.NoError(t, oasErr, "load %s", path)
		require.NotNil(t, oas.find("POST", "/api/v1/agent/chats/r/messages/m/processing"), "the document must describe markAgentMessageProcessing")
	})
	t.Run("Acceptance", func(t *testing.T) {
		t.Parallel()
		testAcceptance(t, newEnv(t))
	})
	t.Run("ProcessingLifecycle", func(t *testing.T) {
		t.Parallel()
		testLifecycle(t, newEnv(t))
	})
	t.Run("Errors", func(t *testing.T) {
		t.Parallel()
		testErrors(t, newEnv(t))
	})
	t.Run("Pagination", func(t *testing.T) {
		t.Parallel()
		testPagination(t, newEnv(t))
	})
	t.Run("WebSocket", func(t *testing.T) {
		t.Parallel()
		testWebSocket(t, newEnv)
	})
}
