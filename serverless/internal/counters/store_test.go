package counters_test

import (
	"testing"

	"minik8s.io/serverless/internal/counters"
	"minik8s.io/serverless/internal/counters/storetest"
)

func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) counters.Store { return counters.NewMemory() })
}
