// Package httpjob implements ElasticJob's HTTP job type (upstream's
// HttpJobExecutor): each item sends one request described by the job's
// http.* props, with the item's ShardingContext JSON (byte-identical to
// upstream's Gson) in the request header shardingContext, over a fresh
// connection with the JDK's connect and read timeout semantics.
//
// Unlike upstream, a response status outside 2xx fails the item (upstream
// only logs 4xx/5xx); see docs/jobtypes.md. The package imports spi and
// spi/gson only.
package httpjob
