package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
)

// maxLine is the longest message the library reads.
const maxLine = 10 << 20

// filterLines copies the client's messages from in to w, a line each, and
// answers on out a line that is no JSON-RPC 2.0 message (which the library
// would only log): a parse error for one that is not JSON, an invalid
// request for JSON that is not a request, a notification or a response.
func filterLines(in io.Reader, w io.Writer, out *lockedWriter) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if reply := refusal(line); reply != nil {
			if _, err := out.Write(reply); err != nil {
				return err
			}
			continue
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return err
		}
	}
	return sc.Err()
}

// refusal is the error response to line, with its id if it has one, or
// nil when line is a JSON-RPC 2.0 message.
func refusal(line []byte) []byte {
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
	}
	var e *sdk.RequestError
	switch {
	case !json.Valid(line):
		e = sdk.NewParseError(map[string]any{"error": "the line is not JSON"})
	case json.Unmarshal(line, &m) != nil || m.JSONRPC != "2.0" || m.Method == "" && m.ID == nil:
		e = sdk.NewInvalidRequest(map[string]any{"error": "not a JSON-RPC 2.0 request, notification or response"})
	default:
		return nil
	}
	if m.ID == nil {
		m.ID = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string            `json:"jsonrpc"`
		ID      json.RawMessage   `json:"id"`
		Error   *sdk.RequestError `json:"error"`
	}{"2.0", m.ID, e})
	return append(b, '\n')
}

// lockedWriter writes each message whole, the library's and the filter's,
// and keeps a turn's errors from any goroutine (an MCP server's stderr
// among them).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
