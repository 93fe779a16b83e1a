package sdk

import (
	"context"
	"iter"
	"net/http"

	"github.com/specloop/specloop/gen"
)

// ListOptions filter and page ListRuns.
type ListOptions struct {
	// Status, when set, lists only the runs in that status.
	Status gen.RunStatus
	// PageSize is how many runs one request fetches; 0 means the server's
	// default.
	PageSize int
}

// ListRuns iterates over every run on the server, newest first, fetching
// pages as it goes. An error ends the iteration.
func (c *Client) ListRuns(ctx context.Context, opts ListOptions) iter.Seq2[gen.Run, error] {
	return func(yield func(gen.Run, error) bool) {
		params := &gen.ListRunsParams{}
		if opts.Status != "" {
			params.Status = &opts.Status
		}
		if opts.PageSize > 0 {
			params.Limit = &opts.PageSize
		}
		for {
			resp, err := c.raw.ListRuns(ctx, params)
			page, err := decode[gen.RunList]("list runs", http.StatusOK, resp, err)
			if err != nil {
				yield(gen.Run{}, err)
				return
			}
			for _, r := range page.Runs {
				if !yield(r, nil) {
					return
				}
			}
			next := page.NextCursor
			if next == nil || *next == "" {
				return
			}
			params.Cursor = next
		}
	}
}
