package itest

import (
	"testing"

	"go.temporal.io/sdk/client"
)

func temporaltestClient(t *testing.T, address string) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: address})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
