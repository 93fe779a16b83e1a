package itest

import (
	"testing"

	"go.temporal.io/server/temporaltest"
)

func TestWarm(t *testing.T) { _ = temporaltest.NewServer }
