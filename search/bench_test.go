package search

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/search/searchtest"
)

// BenchmarkSearch searches a store of SEARCH_BENCH_CONVS synthetic Claude conversations of about 100 KB each
// (default 1,000: 100 MB; make bench's step is 10,000: 1 GB), reporting the index's build time and size, a
// catch-up with nothing changed, and each search's time (ns/op: the rare needle's).
//
//	SEARCH_BENCH_CONVS=10000 go test -run - -bench Search -benchtime 20x ./search/
func BenchmarkSearch(b *testing.B) {
	convs := 1000
	if v, err := strconv.Atoi(os.Getenv("SEARCH_BENCH_CONVS")); err == nil && v > 0 {
		convs = v
	}
	root := filepath.Join(b.TempDir(), "store")
	made, err := searchtest.Make(root, convs, 10, 100<<10)
	if err != nil {
		b.Fatal(err)
	}
	s, err := layout.OpenStore(root)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ix, err := Open(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	start := time.Now()
	if err := ix.CatchUp(nil); err != nil {
		b.Fatal(err)
	}
	build := time.Since(start)
	start = time.Now()
	if err := ix.CatchUp(nil); err != nil {
		b.Fatal(err)
	}
	catchUp := time.Since(start)
	st, err := os.Stat(ix.Path())
	if err != nil {
		b.Fatal(err)
	}
	metrics := map[string]float64{"transcripts-MiB": float64(made.Bytes) / (1 << 20), "build-s": build.Seconds(),
		"index-MiB": float64(st.Size()) / (1 << 20), "catchup-ms": float64(catchUp.Microseconds()) / 1000}
	for _, q := range []struct {
		name, match string
	}{{"common", made.Common}, {"prefix", made.Common[:3] + "*"}, {"phrase", searchtest.NeedleQuery}} {
		start := time.Now()
		res, err := ix.Search(Query{Match: q.match})
		if err != nil || len(res.Hits) == 0 {
			b.Fatalf("%s: %d hits, %v", q.match, len(res.Hits), err)
		}
		metrics[q.name+"-ms"] = float64(time.Since(start).Microseconds()) / 1000
	}
	for b.Loop() {
		res, err := ix.Search(Query{Match: searchtest.Needle})
		if err != nil || len(res.Hits) != searchtest.Needles {
			b.Fatalf("%d hits, %v", len(res.Hits), err)
		}
	}
	for k, v := range metrics { // after the loop: b.Loop's first call drops what was reported before it
		b.ReportMetric(v, k)
	}
}
