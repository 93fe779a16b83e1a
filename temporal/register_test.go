package temporal_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"

	"github.com/specloop/specloop/temporal"
)

// operatorClient is a Temporal client whose operator API has the custom
// search attributes have, refuses with denied, and records what it is
// asked to add.
type operatorClient struct {
	client.Client
	operatorservice.OperatorServiceClient
	have   map[string]enumspb.IndexedValueType
	denied bool
	added  map[string]enumspb.IndexedValueType
}

func (c *operatorClient) OperatorService() operatorservice.OperatorServiceClient { return c }

func (c *operatorClient) ListSearchAttributes(context.Context, *operatorservice.ListSearchAttributesRequest, ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	if c.denied {
		return nil, serviceerror.NewPermissionDenied("operator API", "")
	}
	return &operatorservice.ListSearchAttributesResponse{CustomAttributes: c.have}, nil
}

func (c *operatorClient) AddSearchAttributes(_ context.Context, req *operatorservice.AddSearchAttributesRequest, _ ...grpc.CallOption) (*operatorservice.AddSearchAttributesResponse, error) {
	c.added = req.GetSearchAttributes()
	return &operatorservice.AddSearchAttributesResponse{}, nil
}

// The search attributes are registered when missing, left alone when
// there, refused when registered with another type; a cluster that
// refuses the operator API says so with ErrNoOperatorPermission, which an
// API server with a client's rights only gets past (with a warning).
func TestRegisterSearchAttributes(t *testing.T) {
	ctx := context.Background()
	c := &operatorClient{have: map[string]enumspb.IndexedValueType{"SpecloopStatus": enumspb.INDEXED_VALUE_TYPE_KEYWORD}}
	if err := temporal.RegisterSearchAttributes(ctx, c, "ns"); err != nil {
		t.Fatal(err)
	}
	if len(c.added) != 4 || c.added["SpecloopCreated"] != enumspb.INDEXED_VALUE_TYPE_DATETIME || c.added["SpecloopStatus"] != enumspb.INDEXED_VALUE_TYPE_UNSPECIFIED {
		t.Fatalf("added %v, want the four missing ones", c.added)
	}
	c.have, c.added = c.added, nil
	c.have["SpecloopStatus"] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	if err := temporal.RegisterSearchAttributes(ctx, c, "ns"); err != nil || c.added != nil {
		t.Fatalf("all registered: %v, added %v", err, c.added)
	}
	c.have["SpecloopEnded"] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	if err := temporal.RegisterSearchAttributes(ctx, c, "ns"); err == nil || !strings.Contains(err.Error(), "SpecloopEnded") || errors.Is(err, temporal.ErrNoOperatorPermission) {
		t.Fatalf("a wrong type: %v", err)
	}
	c.denied = true
	if err := temporal.RegisterSearchAttributes(ctx, c, "ns"); !errors.Is(err, temporal.ErrNoOperatorPermission) {
		t.Fatalf("the operator API refused: %v, want ErrNoOperatorPermission", err)
	}
}
