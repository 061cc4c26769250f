package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleepStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on a cancelled context = %v, want context.Canceled", err)
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep(0) on a cancelled context = %v, want context.Canceled", err)
	}
	if err := Sleep(context.Background(), time.Nanosecond); err != nil {
		t.Fatalf("Sleep = %v, want nil", err)
	}
}
