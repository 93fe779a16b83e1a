package spec_test

import (
	"testing"

	"github.com/specloop/specloop/spec"
)

func TestLoadValidates(t *testing.T) {
	doc, err := spec.Load()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := spec.Load()
	if doc != again {
		t.Fatal("Load parsed the document twice; it must be loaded once")
	}
}
