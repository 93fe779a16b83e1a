package runner

import (
	"net/url"
	"testing"
)

// TestCacheKeyTellsHostsApart: two URLs of different hosts (or different
// users) never share a cache entry, however their user names and IPv6
// literals are written: a shared entry would let a repository of one
// host be served, or fetched over, for the other.
func TestCacheKeyTellsHostsApart(t *testing.T) {
	t.Parallel()
	for _, pair := range [][2]string{
		// user "a.example/x" at b.example, against a.example's path "x@b.example/r".
		{"https://a.example%2Fx@b.example/r", "https://a.example/x@b.example/r"},
		{"https://[::1:8443]/r", "https://[::1]:8443/r"},
		{"https://u%40v@h.example/r", "https://u@v.h.example/r"},
	} {
		a, err := url.Parse(pair[0])
		if err != nil {
			t.Fatal(err)
		}
		b, err := url.Parse(pair[1])
		if err != nil {
			t.Fatal(err)
		}
		if a.Hostname() == b.Hostname() && a.Port() == b.Port() {
			t.Fatalf("%s and %s: same host, the case tests nothing", pair[0], pair[1])
		}
		if cacheKey(a) == cacheKey(b) {
			t.Errorf("%s and %s share the cache entry %s", pair[0], pair[1], cacheKey(a))
		}
	}
	// The same repository written differently still shares one.
	for _, pair := range [][2]string{
		{"https://H.example/r/", "https://h.example:443/r"},
		{"https://u@[::1]:443/r", "https://u@[::1]/r"},
	} {
		a, _ := url.Parse(pair[0])
		b, _ := url.Parse(pair[1])
		if cacheKey(a) != cacheKey(b) {
			t.Errorf("%s and %s have different cache entries", pair[0], pair[1])
		}
	}
}
