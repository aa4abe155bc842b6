package reconcile

import (
	"log/slog"
	"testing"
	"time"

	"minik8s.io/shared/workqueue/clock"
)

func TestWithDefaults(t *testing.T) {
	o := Options{}.WithDefaults()
	if _, ok := o.Clock.(clock.Real); !ok || o.Logger != slog.Default() {
		t.Errorf("defaults %+v, want the real clock and slog.Default()", o)
	}
	fc, log := clock.NewFake(time.Unix(0, 0)), slog.New(slog.DiscardHandler)
	o = Options{Workers: 3, Clock: fc, Logger: log}.WithDefaults()
	if o.Clock != fc || o.Logger != log || o.Workers != 3 {
		t.Errorf("WithDefaults replaced what was set: %+v", o)
	}
}
