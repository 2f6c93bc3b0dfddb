package main

import (
	"os"
	"testing"
)

func TestZZSearchFigures(t *testing.T) {
	if os.Getenv("ZZ_SEARCH") == "" {
		t.Skip()
	}
	figs, err := searchFigures("/tmp/search/sessionfs", "/tmp/search/benchstore", 10000, 9)
	for _, f := range figs {
		t.Logf("%s: %.1f %s (goal %s)", f.Name, f.Value, f.Unit, f.Goal)
	}
	if err != nil {
		t.Fatal(err)
	}
}
