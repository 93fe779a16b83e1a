package main

// The object stores --store may name besides a directory: the drivers of
// gocloud.dev/blob linked into this program.
import (
	_ "gocloud.dev/blob/azureblob" // azblob://container
	_ "gocloud.dev/blob/gcsblob"   // gs://bucket
	_ "gocloud.dev/blob/s3blob"    // s3://bucket, and S3 APIs such as MinIO's (?endpoint=…&use_path_style=true)
)
