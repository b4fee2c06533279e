// Package hostconfig reads the host's configuration file, the file `ejob run -c
// FILE` reads. Its `elasticjob:` section has the shape of Apache
// ElasticJob-Lite's Spring Boot starter (registry center, jobs, tracing,
// dump), so an existing section moves over unchanged; its `ejob:` section
// holds the host's own settings.
//
// Load and Parse check the whole file before anything starts and return
// either a complete File or a *FileError listing every problem as
// FILE:LINE: reason, sorted by line. docs/configuration.md documents every
// key.
package hostconfig
