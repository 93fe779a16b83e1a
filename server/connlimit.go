package server

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// ConnLimit caps the connections that listeners serve at once, without
// letting idle connections hold the places: when a connection arrives at
// the cap, the connection that has been idle the longest (connected but
// not yet sending a whole request, or waiting between keep-alive
// requests) is closed to make room, and only when every connection is
// busy with a request does the new one wait (in Accept, as with
// netutil.LimitListener). So a client that opens the cap's worth of
// sockets and sends nothing delays nobody. A connection counts as idle
// only once the http.Server reports it through ConnState: give ConnState
// to the server that serves Listener.
//
// The server's API uses one (Config.MaxConnections); the --metrics-addr
// listener of `specloop serve` another.
type ConnLimit struct {
	mu    sync.Mutex
	cond  *sync.Cond // signalled when a connection closes or turns idle
	max   int
	conns map[*limitedConn]struct{} // the admitted connections
}

// NewConnLimit returns a ConnLimit of max connections (at least 1).
func NewConnLimit(n int) *ConnLimit {
	l := &ConnLimit{max: max(1, n), conns: map[*limitedConn]struct{}{}}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// Listener wraps ln: its Accept admits a connection under the cap.
func (l *ConnLimit) Listener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, limit: l}
}

// ConnState is the http.Server hook that tells the limit which
// connections are idle; set it as the server's ConnState.
func (l *ConnLimit) ConnState(c net.Conn, st http.ConnState) {
	lc := asLimited(c)
	if lc == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch st {
	case http.StateNew, http.StateIdle:
		lc.idleSince = time.Now()
		l.cond.Broadcast() // an Accept at the cap may close it now
	default:
		lc.idleSince = time.Time{}
	}
}

// asLimited finds the limitedConn in c, which may wrap it.
func asLimited(c net.Conn) *limitedConn {
	for c != nil {
		switch v := c.(type) {
		case *limitedConn:
			return v
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// admit takes a place for c, closing the longest-idle connection when
// none is free, or waiting until one is; false when ln was closed
// meanwhile.
func (l *ConnLimit) admit(c *limitedConn, ln *limitListener) bool {
	l.mu.Lock()
	for len(l.conns) >= l.max {
		if ln.closed {
			l.mu.Unlock()
			return false
		}
		var victim *limitedConn
		for o := range l.conns {
			if !o.idleSince.IsZero() && (victim == nil || o.idleSince.Before(victim.idleSince)) {
				victim = o
			}
		}
		if victim == nil {
			l.cond.Wait()
			continue
		}
		delete(l.conns, victim)
		l.mu.Unlock()
		victim.Conn.Close() // the server sees the error and closes its side
		l.mu.Lock()
	}
	l.conns[c] = struct{}{}
	l.mu.Unlock()
	return true
}

func (l *ConnLimit) release(c *limitedConn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.cond.Broadcast()
	l.mu.Unlock()
}

type limitListener struct {
	net.Listener
	limit  *ConnLimit
	closed bool // guarded by limit.mu, which admit holds when it looks
}

func (ln *limitListener) Accept() (net.Conn, error) {
	c, err := ln.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &limitedConn{Conn: c, limit: ln.limit}
	if !ln.limit.admit(lc, ln) {
		c.Close()
		return nil, net.ErrClosed
	}
	return lc, nil
}

func (ln *limitListener) Close() error {
	ln.limit.mu.Lock()
	ln.closed = true
	ln.limit.cond.Broadcast() // an Accept waiting at the cap returns
	ln.limit.mu.Unlock()
	return ln.Listener.Close()
}

// limitedConn is an admitted connection; closing it frees its place.
type limitedConn struct {
	net.Conn
	limit     *ConnLimit
	idleSince time.Time // guarded by limit.mu; zero while busy or not yet reported
	once      sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.limit.release(c) })
	return err
}

// NetConn returns the wrapped connection.
func (c *limitedConn) NetConn() net.Conn { return c.Conn }
