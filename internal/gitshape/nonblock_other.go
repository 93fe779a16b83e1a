//go:build !unix

package gitshape

// nonblock: no portable flag; the file is checked to be regular first.
const nonblock = 0
