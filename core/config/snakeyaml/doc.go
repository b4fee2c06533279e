// Package snakeyaml writes YAML byte-for-byte as SnakeYAML 2.2 does with
// default DumperOptions (block style, indent 2, width 80, line splitting on,
// allowUnicode on) and ElasticJob's representer rules, and resolves plain
// scalars with SnakeYAML's YAML 1.1 implicit resolvers.
//
// gopkg.in/yaml.v3 is used to parse, but not to emit: its emitter (a libyaml
// port) chooses quoting and line folding differently (it double-quotes where
// SnakeYAML single-quotes, treats YAML 1.1 values such as `1:30`, `1_000` or
// `2026-01-01` as plain strings, folds at a different width and never writes
// `- ` sequences at the parent's indentation). ElasticJob's config and
// instance nodes must be written exactly as Java writes them, so this package
// ports the relevant part of SnakeYAML's Emitter (itself a port of PyYAML's).
package snakeyaml
