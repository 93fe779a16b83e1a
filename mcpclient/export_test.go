package mcpclient

// Split is split, for the tests of how a --mcp command line is read.
var Split = split

// Environ is environ, for the tests of a stdio server's environment on
// every system.
var Environ = environ
