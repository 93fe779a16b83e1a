package itest

import (
	"testing"

	"go.temporal.io/sdk/client"
)

func temporaltestClient(t *testing.T, address, namespace string) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: address, Namespace: namespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
