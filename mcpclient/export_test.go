package mcpclient

// Split is split, for the tests of how a --mcp command line is read.
var Split = split
